// Package workers runs a Smith program's steps and performs the run's other
// effects on this machine. The Registry (the vm's step.Runner) sends each
// request by its kind to steprun (commands), agent (providers) or builtin
// (internal workers), and delivers messages; Local is the vm's Host (git
// worktrees and branches, agents' folders and messages, file_exists,
// ARTIFACT: reads, the change plan, the run's own files).
//
// It must never import vm, compiler or manifest; never take a path from a
// user or a model without confine at the moment of use; never start a
// process except through proc.Run, nor a shell; and never write one of
// Smith's own files except through confine.WriteFileAtomic.
package workers
