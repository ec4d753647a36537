package sso

import (
	"context"
	"net/http"

	"golang.org/x/oauth2"
)

// oauth2ClientContext makes x/oauth2 use seatd's IdP client (its timeout)
// for the code exchange.
func oauth2ClientContext(r *http.Request, c *http.Client) context.Context {
	return context.WithValue(r.Context(), oauth2.HTTPClient, c)
}
