package lang

// The fields a ${...} reference may name after its root. StepFields is the
// one table that smithc check accepts and the VM resolves: a test on each
// side (compiler TestStepFieldsChecked, vm TestStepFieldTable) fails when a
// field is missing from either.
var (
	// StepFields are the fields of ${steps.NAME.FIELD}.
	StepFields = [...]string{
		"exit_code", "output", "stderr", "lines", "json", "duration", "status",
		"signal", "attempts", "started_at", "ended_at", "validation_error", "iterations",
		"output_file",
	}
	// RunFields are the fields of ${run.FIELD}.
	RunFields = [...]string{"id", "timestamp_utc"}
	// AgentFields are the fields of ${agent.FIELD}.
	AgentFields = [...]string{"name", "inbox", "processed"}
	// LoopFields are the fields of ${loop.FIELD}.
	LoopFields = [...]string{"index", "total"}
)
