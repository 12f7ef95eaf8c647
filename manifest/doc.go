// Package manifest reads Smith's two source formats into raw types that
// mirror the documents field for field, with a position for every value:
// YAML step workflows (Workflow, CONTRACT section 3) and workflows.json
// Node/Block manifests (Manifest, CONTRACT section 7).
//
// Loading is a pipeline of three stages, and Load, LoadWorkflow and
// LoadManifest run all three:
//
//   - ParseYAML and ParseJSON build a Value tree, the document itself with
//     the position of every value and key (YAML through the library's node
//     positions, JSON through the decoder's token offsets). Syntax errors,
//     duplicate keys and runaway alias expansion are E_PARSE.
//   - A Validator checks the tree against the format's JSON Schema, which is
//     generated from the Go types (WorkflowSchema, ManifestSchema), so the
//     schema that smithc prints and the one the loaders enforce are the
//     same. Every violation is an E_SCHEMA diagnostic at the offending value,
//     with a did-you-mean for unknown keys.
//   - DecodeWorkflow and DecodeManifest fill the typed structs, skipping
//     values of the wrong shape, which validation has already reported.
//
// The package also holds the participle grammars of the action DSL
// (JUMP:Block, CALL:Node, ...) and of ${...} references, whose positions
// are shifted by the position of the string they sit in, so that every
// diagnostic points into the file.
//
// manifest makes no semantic checks (unknown targets, duplicate steps,
// graph properties): those belong to the compiler. It imports only
// source, participle, the YAML library and the two JSON Schema
// libraries.
package manifest
