package gateway

// OpenAPIDocument is the document seatd serves at GET /openapi.json: the
// generated gen/openapi one with the HTTP-only routes. The docs generator
// (scripts/docgen) writes it into the reference.
func OpenAPIDocument() ([]byte, error) { return openAPIDocument() }

// OpenAPI31Document is the document seatd serves at GET /openapi-3.1.json:
// OpenAPIDocument converted to OpenAPI 3.1.
func OpenAPI31Document() ([]byte, error) {
	v2, err := openAPIDocument()
	if err != nil {
		return nil, err
	}
	return openAPI31Document(v2)
}
