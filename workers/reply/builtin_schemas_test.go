package reply

import (
	"encoding/json"
	"testing"

	"github.com/invopop/jsonschema"
)

// codeAndExplanation is the reply the CodeAndExplanation schema asks for.
type codeAndExplanation struct {
	Code        string `json:"code" jsonschema:"minLength=1"`
	Explanation string `json:"explanation" jsonschema:"minLength=1"`
}

// preambleFields is what Internal:PreambleValidator requires of a preamble.
type preambleFields struct {
	ID          string `json:"id" jsonschema:"minLength=1"`
	Description string `json:"description" jsonschema:"minLength=1"`
}

// TestBuiltinSchemaTexts: each built-in schema's text is what the
// reflection library makes of its Go type (inline, no $defs, every field
// required, other properties allowed).
func TestBuiltinSchemaTexts(t *testing.T) {
	one := uint64(1)
	tests := []struct {
		name, text string
		schema     *jsonschema.Schema
	}{
		{"CodeAndExplanation", codeAndExplanationSchema, reflectSchema(&codeAndExplanation{})},
		{"CodeOnly", codeOnlySchema, &jsonschema.Schema{Version: jsonschema.Version, Type: "string", MinLength: &one}},
		{"Preamble", preambleSchema, reflectSchema(&preambleFields{})},
	}
	for _, tt := range tests {
		b, err := json.MarshalIndent(tt.schema, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.text {
			t.Errorf("the %s schema's text differs from its type's; put this in builtin_schemas.go:\n%s", tt.name, b)
		}
	}
}

func reflectSchema(v any) *jsonschema.Schema {
	r := &jsonschema.Reflector{
		DoNotReference:            true,
		ExpandedStruct:            true,
		AllowAdditionalProperties: true,
		Anonymous:                 true,
	}
	return r.Reflect(v)
}
