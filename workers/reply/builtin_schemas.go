package reply

import (
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"

	"smith/lang"
)

// A CodeAndExplanation is the reply the CodeAndExplanation schema asks for:
// an object with a non-empty code and a non-empty explanation. Other keys are
// allowed and kept.
type CodeAndExplanation struct {
	Code        string `json:"code" jsonschema:"minLength=1"`
	Explanation string `json:"explanation" jsonschema:"minLength=1"`
}

// preambleFields is what Internal:PreambleValidator requires of a file's
// preamble: a non-empty id and description. Other keys are allowed.
type preambleFields struct {
	ID          string `json:"id" jsonschema:"minLength=1"`
	Description string `json:"description" jsonschema:"minLength=1"`
}

// builtinSchemaText returns the JSON Schema text of a built-in schema, or
// false for another name. The object schemas are reflected from the Go
// types; CodeOnly is a non-empty string.
func builtinSchemaText(name string) (string, bool) {
	switch name {
	case lang.SchemaCodeAndExplanation:
		return reflectSchema(&CodeAndExplanation{}), true
	case lang.SchemaCodeOnly:
		one := uint64(1)
		return printSchema(&jsonschema.Schema{
			Version:   jsonschema.Version,
			Type:      "string",
			MinLength: &one,
		}), true
	}
	return "", false
}

// PreambleSchemaText is the JSON Schema of preambleFields.
func PreambleSchemaText() string {
	return reflectSchema(&preambleFields{})
}

// ValidatePreamble validates the fields of a file's preamble against
// PreambleSchemaText and returns "" or the failures (as SchemaSet.Validate
// words them, without ValidationFailPrefix); err is an internal error.
func ValidatePreamble(fields map[string]any) (problem string, err error) {
	sch, err := compileSchema("Preamble", PreambleSchemaText())
	if err != nil {
		return "", err
	}
	return validateValue(sch, fields), nil
}

// reflectSchema returns the schema of v's type: inline (no $defs), every
// field required, other properties allowed.
func reflectSchema(v any) string {
	r := &jsonschema.Reflector{
		DoNotReference:            true,
		ExpandedStruct:            true,
		AllowAdditionalProperties: true,
		Anonymous:                 true,
	}
	return printSchema(r.Reflect(v))
}

// printSchema prints s indented; the output is deterministic (properties
// keep their declaration order).
func printSchema(s *jsonschema.Schema) string {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("internal error: print built-in schema: %v", err))
	}
	return string(b)
}
