// Package provider holds what Smith knows about the providers a step can
// ask: the presets (clis, one record per agent CLI: argv, model and
// permission flags, environment, config home, settings files, install
// hint, and the readers of its reply and activity), a workflow's own provider definitions (Def, Param, Transport)
// and how a name resolves to one (Lookup), the provider template keys and
// their substitution (Vars, Subst, Uses), reading a CLI's reply from its
// stdout as a stream and classifying its failure as retryable or not
// (ReadReplyFrom, ExitRetryable, ExitInvalid), the mock's script format (ParseScript) and the hint for a
// CLI that is not installed (InstallHint).
//
// It is facts and formats only: it must never start a process, read or
// write a file, or know about steps, requests, results or the run's
// layout. Running a provider step (confining its paths, building the
// invocation, the retries and fallbacks, record and replay) is package
// workers' job.
package provider
