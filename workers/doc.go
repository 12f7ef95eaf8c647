// Package workers runs the units of work of a Smith program and performs
// the run's other effects on this machine.
//
// It holds the Registry (the vm's Runner): command steps, provider steps
// (confining their paths, the prompt, the invocation of a preset or a
// workflow's own provider, retries and fallbacks, the mock, record and
// replay), the internal workers of lang.InternalWorkers, the output
// capture; and Local, the vm's Host (git worktrees, agents' folders and
// messages, file_exists, ARTIFACT: reads, the change plan, the run's own
// files). It leans on three packages below it: workers/proc runs every
// process (argv, process groups, the child's environment, capture and
// masking), workers/provider holds the providers' facts and formats, and
// workers/reply cleans and validates AI replies.
//
// It must never import vm, compiler or manifest; never take a path from a
// user or a model without confine at the moment of use; never start a
// process except through proc.Run, nor a shell; and never write one of
// Smith's own files except through confine.WriteFileAtomic.
package workers
