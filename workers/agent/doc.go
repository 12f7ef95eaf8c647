// Package agent runs provider steps: Runner.Run confines the step's paths,
// waits for its preconditions, assembles the prompt (the agent's
// instructions, the injected dependencies, the feedback), then calls each
// provider in turn with its own retries: a preset or a workflow's own CLI
// through its invocation (argv, stdin or a temporary file), or the built-in
// mock; it records the calls (--record) or answers them from a recording
// (--replay), keeps the reply and captures the output.
//
// It must never import workers, vm, compiler or manifest; never start a
// process except through proc.Run (steprun.Spec), nor a shell; never take a
// path from a user or a model without confine at the moment of use; and
// never write one of Smith's own files except through
// confine.WriteFileAtomic.
package agent
