// Package failure turns a backend failure into the error a client sees,
// one way for every layer of the distributed store.
package failure

import (
	"context"
	"errors"
	"log/slog"

	"github.com/seatd/seatd/server"
)

// Public returns err unchanged if it is a *server.Error; anything else
// (a PostgreSQL or Redis failure) is logged under op and becomes
// UNAVAILABLE, without its details.
func Public(log *slog.Logger, op string, err error) error {
	if err == nil {
		return nil
	}
	var e *server.Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		log.Debug("distributed store: "+op+": caller gave up", "err", err)
	} else {
		log.Error("distributed store: "+op, "err", err)
	}
	return server.Unavailable(err)
}
