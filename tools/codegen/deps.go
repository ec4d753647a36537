//go:build tools

// Package codegen pins the REST client generators that e2e
// TestGeneratedRESTClients runs (go-swagger from the Swagger 2.0 document,
// oapi-codegen from the OpenAPI 3.1 one, as `go tool` tools of this module)
// and the runtime packages the clients they write import, so that the test
// builds those clients with this go.sum and nothing else.
package codegen

import (
	_ "github.com/go-openapi/errors"
	_ "github.com/go-openapi/runtime"
	_ "github.com/go-openapi/runtime/client"
	_ "github.com/go-openapi/strfmt"
	_ "github.com/go-openapi/swag"
	_ "github.com/go-openapi/validate"
	_ "github.com/oapi-codegen/runtime"
)
