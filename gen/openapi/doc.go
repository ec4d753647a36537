// Package openapi publishes the OpenAPI document that protoc-gen-openapiv2
// writes beside this file (the only hand-written file under gen/).
package openapi

import _ "embed"

// Document is the REST API description, served by seatd at /openapi.json.
//
//go:embed seatd.swagger.json
var Document []byte
