package grpcapi

import (
	"fmt"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// prioritiesFromProto converts a LicensePolicy's priorities, refusing a
// subject kind left unspecified or unknown (priorities[1].subject.kind);
// the service checks the rest.
func prioritiesFromProto(in []*seatdv1.PolicyPriority) ([]server.Priority, error) {
	if len(in) > server.MaxPolicyRules {
		return nil, server.Invalid("priorities", "must be at most %d entries", server.MaxPolicyRules)
	}
	var out []server.Priority
	for i, pr := range in {
		f := fmt.Sprintf("priorities[%d]", i)
		kind, ok := subjectKindFromProto[pr.GetSubject().GetKind()]
		if !ok {
			return nil, enumProblem(f+".subject.kind", int32(pr.GetSubject().GetKind()), "KIND_USER, KIND_HOST, KIND_GROUP or KIND_HOST_GROUP")
		}
		out = append(out, server.Priority{
			Feature: pr.GetFeature(), Level: int(pr.GetLevel()),
			Subject: server.Subject{Kind: kind, Name: pr.GetSubject().GetName()},
		})
	}
	return out, nil
}

func prioritiesToProto(ps []server.Priority) []*seatdv1.PolicyPriority {
	var out []*seatdv1.PolicyPriority
	for _, pr := range ps {
		out = append(out, &seatdv1.PolicyPriority{
			Feature: pr.Feature, Level: int32(pr.Level),
			Subject: &seatdv1.PolicySubject{Kind: subjectKindToProto[pr.Subject.Kind], Name: pr.Subject.Name},
		})
	}
	return out
}
