package compiler

import (
	"smith/isa"
	"smith/lang"
)

// An internalWorker is one Internal:* worker (CONTRACT section 8) with the
// signals it can emit, in a fixed order.
type internalWorker struct {
	Name    string // without the Internal: prefix
	Signals []string
}

// internalWorkers is the table of internal workers, in documentation order.
var internalWorkers = [...]internalWorker{
	{"TestRunner", []string{lang.SigSuccess, lang.SigFailure}},
	{"RunLinter", []string{lang.SigSuccess, lang.SigFailure}},
	{"RunBuilder", []string{lang.SigSuccess, lang.SigFailure}},
	{"FileSystemWriter", []string{lang.SigSuccess, lang.SigFailure}},
	{"DocumentationWriter", []string{lang.SigSuccess, lang.SigFailure}},
	{"PreambleValidator", []string{lang.SigSuccess, lang.SigValidationFail}},
	{"UpdateChangePlan", []string{lang.SigSuccess}},
}

// internalPrefix starts the worker string of every internal worker.
const internalPrefix = "Internal:"

// lookupInternal returns the internal worker named by a worker string
// ("Internal:TestRunner"), or nil.
func lookupInternal(worker string) *internalWorker {
	for i := range internalWorkers {
		if internalPrefix+internalWorkers[i].Name == worker {
			return &internalWorkers[i]
		}
	}
	return nil
}

// internalNames returns every internal worker string, with its prefix.
func internalNames() []string {
	out := make([]string, len(internalWorkers))
	for i, w := range internalWorkers {
		out[i] = internalPrefix + w.Name
	}
	return out
}

// builtinSchemas are the validation schemas every document may name
// (CONTRACT section 9).
var builtinSchemas = [...]string{"CodeAndExplanation", "CodeOnly"}

// providerPresets are the built-in providers (CONTRACT section 5).
var providerPresets = [...]string{"claude", "gemini", "codex", "mock"}

// templateKeys are the provider template keys every provider may use,
// besides the keys of its defaults and of provider_params.
var templateKeys = [...]string{"PROMPT", "PROMPT_FILE", "INPUT_FILE", "OUTPUT_FILE", "model"}

// defaultPayloadMerge is the payload_merge_strategy of an AI worker that
// names none (CONTRACT 7.3).
var defaultPayloadMerge = [...]string{"PAYLOAD", "CONTRACT", "STATIC_MEMORY", "METADATA"}

// defaultOutputType is the segment type of an AI worker's reply when its
// output_type is not given (CONTRACT 7.1).
const defaultOutputType = "AI_RESPONSE"

// defaultCommandOutputType is the segment type of a command worker's
// stdout when its output_type is not given (CONTRACT 12.5).
const defaultCommandOutputType = "COMMAND_OUTPUT"

// stepFields are the fields of ${steps.NAME.FIELD}: the table the VM
// resolves too.
var stepFields = isa.StepFields

// runFields are the fields of ${run.FIELD}.
var runFields = [...]string{"id", "timestamp_utc"}

// agentFields are the fields of ${agent.FIELD}.
var agentFields = [...]string{"name", "inbox", "processed"}

// loopFields are the fields of ${loop.FIELD}.
var loopFields = [...]string{"index", "total"}

// Special goto targets of YAML handlers (CONTRACT 3.3).
const (
	targetEnd          = "_end"
	targetError        = "_error"
	targetStart        = "_start"
	targetLoopBreak    = "_loop_break"
	targetLoopContinue = "_loop_continue"
	targetBranchEnd    = "_branch_end"
)

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
