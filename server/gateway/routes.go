package gateway

import "net/http"

// Handle serves one more route that is not a gRPC method (Go 1.22
// pattern, e.g. "GET /v1/admin/backup"); a pattern more specific than
// "/v1/" takes its requests from the REST gateway.
func (h *Handler) Handle(pattern string, handler http.Handler) { h.mux.Handle(pattern, handler) }
