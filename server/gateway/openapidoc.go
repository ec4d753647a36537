package gateway

// OpenAPIDocument is the document seatd serves at GET /openapi.json: the
// generated gen/openapi one with the HTTP-only routes. The docs generator
// (scripts/docgen) writes it into the reference.
func OpenAPIDocument() ([]byte, error) { return openAPIDocument() }
