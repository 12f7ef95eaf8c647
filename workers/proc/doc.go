// Package proc runs one process the way Smith runs every process, and
// masks what it says.
//
// Run takes an argv (never a shell: Argv[0] is looked up in the PATH of the
// child's own environment), starts it in its own process group, feeds its
// stdin from a file or /dev/null, captures stdout and stderr (the first
// MemCap bytes in memory, the whole stream in a spill file and a stderr log
// when asked), masks every captured byte with a text.Masker before it is stored
// or shown, and stops the whole group on timeout or cancellation: SIGTERM,
// then SIGKILL after the grace period. Nothing the process started outlives
// Run: when the leader exits its group is killed, a subreaper catches what
// left the group, and each group is recorded in RUN_ROOT/procs-* so that
// KillLeftovers finds what a crash left running. A child's environment is
// the explicit list its Spec gives (steprun.BuildEnv builds it); nothing
// else of the parent's environment reaches a child.
//
// It must never import another of Smith's packages but the string leaf
// workers/text (besides the standard library and golang.org/x/sys/unix):
// it knows nothing of steps, providers, signals, confinement or the run's
// layout; the paths it is given are
// already confined by its caller. It must never start a shell, never give a
// child the parent's environment, and never store or show a captured byte
// that has not been masked.
package proc
