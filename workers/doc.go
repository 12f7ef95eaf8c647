// Package workers runs the units of work of a Smith program and performs
// the run's other effects on this machine.
//
// It holds the Registry (the vm's Runner): command steps (argv only, each
// in its own process group, nothing a step started outlives it, the child
// environment built explicitly), provider steps (the presets' facts, the
// mock, record and replay), the internal workers of lang.InternalWorkers,
// reply cleaning and JSON Schema validation, secret masking; and Local,
// the vm's Host (git worktrees, agents' folders and messages, file_exists,
// ARTIFACT: reads, the change plan, the run's own files).
//
// It must never import vm, compiler or manifest; never take a path from a
// user or a model without confine at the moment of use; never start a
// shell; and never write one of Smith's own files except through
// confine.WriteFileAtomic.
package workers
