// Package compiler turns a source document (a YAML step workflow or a
// workflows.json manifest) into a checked isa.Program.
//
// The pipeline is: manifest.Load (parse with positions, validate against the
// JSON Schema generated from the Go types, decode) → LowerWorkflow or
// LowerManifest (one IR for both formats, with the semantic checks: names,
// targets, workers, schemas, providers, ${...} references, literal paths,
// strict flow) → CheckGraph (gonum: reachability, fallback coverage, cycles
// with no exit, unbounded AI loops) → Generate (layout and code generation,
// labels resolved in one pass) → isa.Program.Verify. DOT draws the compiled
// program. Every stage appends to one source.Diagnostics list and carries on;
// only a document that cannot be read stops the pipeline early.
package compiler
