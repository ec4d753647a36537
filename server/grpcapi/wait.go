package grpcapi

import (
	"regexp"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

// queueTicketPattern matches what the queues hand out (server.NewID("w_")).
var queueTicketPattern = regexp.MustCompile(`^(w_[0-9a-f]{24})?$`)

// WaitForSeat streams the caller's place in the license's queue until the
// service grants it a seat (service.WaitForSeat has the queue's rules).
func (h *seatService) WaitForSeat(req *seatdv1.WaitForSeatRequest, stream seatdv1.SeatService_WaitForSeatServer) error {
	in := seatRequest(req)
	if err := clientFields(in); err != nil {
		return err
	}
	if !queueTicketPattern.MatchString(req.GetQueueTicket()) {
		return server.Invalid("queue_ticket", "must be empty or a ticket from a QueuePosition")
	}
	g, err := h.s.svc.WaitForSeatCounted(stream.Context(), in, req.GetQueueTicket(), func(p service.Place) error {
		return stream.Send(&seatdv1.WaitForSeatResponse{Event: &seatdv1.WaitForSeatResponse_Position{
			Position: &seatdv1.QueuePosition{Position: int32(p.Position), QueueLength: int32(p.QueueLength), Ticket: p.Ticket},
		}})
	})
	if err != nil {
		return err
	}
	return stream.Send(&seatdv1.WaitForSeatResponse{Event: &seatdv1.WaitForSeatResponse_Granted{
		Granted: h.s.acquireResponse(g),
	}})
}
