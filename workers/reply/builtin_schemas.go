package reply

import "smith/lang"

// The built-in schemas' texts. The object schemas are those that
// invopop/jsonschema reflects from the Go types of builtin_schemas_test.go
// (codeAndExplanation, preambleFields): TestBuiltinSchemaTexts fails when a
// text and its type disagree and prints the text to put here. The binaries
// keep the texts, not the reflection library.
const (
	// codeAndExplanationSchema: an object with a non-empty code and a
	// non-empty explanation; other keys are allowed and kept.
	codeAndExplanationSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "properties": {
    "code": {
      "type": "string",
      "minLength": 1
    },
    "explanation": {
      "type": "string",
      "minLength": 1
    }
  },
  "type": "object",
  "required": [
    "code",
    "explanation"
  ]
}`
	// codeOnlySchema: a non-empty string.
	codeOnlySchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "string",
  "minLength": 1
}`
	// preambleSchema is what Internal:PreambleValidator requires of a
	// file's preamble: a non-empty id and description; other keys are
	// allowed.
	preambleSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "properties": {
    "id": {
      "type": "string",
      "minLength": 1
    },
    "description": {
      "type": "string",
      "minLength": 1
    }
  },
  "type": "object",
  "required": [
    "id",
    "description"
  ]
}`
)

// builtinSchemaText returns the JSON Schema text of a built-in schema, or
// false for another name.
func builtinSchemaText(name string) (string, bool) {
	switch name {
	case lang.SchemaCodeAndExplanation:
		return codeAndExplanationSchema, true
	case lang.SchemaCodeOnly:
		return codeOnlySchema, true
	}
	return "", false
}

// PreambleSchemaText is the JSON Schema of a file's preamble.
func PreambleSchemaText() string { return preambleSchema }

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
