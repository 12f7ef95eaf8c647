package isa

// StepFields are the fields of ${steps.NAME.FIELD}: the one table that
// smithc check accepts and the VM resolves (a test on each side keeps
// them equal).
var StepFields = [...]string{
	"exit_code", "output", "stderr", "lines", "json", "duration", "status",
	"signal", "attempts", "started_at", "ended_at", "validation_error", "iterations",
}
