// Package docs holds the project's documentation; its Go side carries the
// OpenAPI description of the HTTP contract so that tests can load it
// (docs/API.md is the same contract for people).
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml: every public route, header, body, status and
// error code, in OpenAPI 3.1.
//
//go:embed openapi.yaml
var OpenAPI []byte
