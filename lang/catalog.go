package lang

import "strings"

// An InternalWorker is one Internal:* worker (CONTRACT section 8) with the
// signals it can emit, in a fixed order. The compiler checks a block's
// worker and its transitions against this table; workers implements each
// entry (a test there fails for a name without an implementation, and for
// an implementation without a name here).
type InternalWorker struct {
	Name    string // with the Internal: prefix
	Signals []string
	// Config is the key of the config command the worker runs
	// (test_command; Config.Command), "" for none.
	Config string
}

// InternalPrefix starts the worker string of every internal worker.
const InternalPrefix = "Internal:"

// Internal worker names, as a block's worker spells them.
const (
	InternalTestRunner          = "Internal:TestRunner"
	InternalRunLinter           = "Internal:RunLinter"
	InternalRunBuilder          = "Internal:RunBuilder"
	InternalFileSystemWriter    = "Internal:FileSystemWriter"
	InternalDocumentationWriter = "Internal:DocumentationWriter"
	InternalPreambleValidator   = "Internal:PreambleValidator"
	InternalUpdateChangePlan    = "Internal:UpdateChangePlan"
)

// InternalWorkers is the table of internal workers, in documentation order.
var InternalWorkers = [...]InternalWorker{
	{InternalTestRunner, []string{SigSuccess, SigFailure}, ConfigTestCommand},
	{InternalRunLinter, []string{SigSuccess, SigFailure}, ConfigLintCommand},
	{InternalRunBuilder, []string{SigSuccess, SigFailure}, ConfigBuildCommand},
	{InternalFileSystemWriter, []string{SigSuccess, SigFailure}, ""},
	{InternalDocumentationWriter, []string{SigSuccess, SigFailure}, ""},
	{InternalPreambleValidator, []string{SigSuccess, SigValidationFail}, ""},
	{InternalUpdateChangePlan, []string{SigSuccess}, ""},
}

// LookupInternal returns the internal worker named by a worker string
// ("Internal:TestRunner"), or nil.
func LookupInternal(worker string) *InternalWorker {
	for i := range InternalWorkers {
		if InternalWorkers[i].Name == worker {
			return &InternalWorkers[i]
		}
	}
	return nil
}

// InternalNames returns every internal worker string, in documentation
// order.
func InternalNames() []string {
	out := make([]string, len(InternalWorkers))
	for i, w := range InternalWorkers {
		out[i] = w.Name
	}
	return out
}

// Built-in validation schemas (CONTRACT section 9); workers holds their
// JSON Schema text.
const (
	SchemaCodeAndExplanation = "CodeAndExplanation"
	SchemaCodeOnly           = "CodeOnly"
)

// BuiltinSchemas are the validation schemas every document may name, sorted.
var BuiltinSchemas = [...]string{SchemaCodeAndExplanation, SchemaCodeOnly}

// PresetMock is the built-in provider that runs no process.
const PresetMock = "mock"

// ProviderPresets are the built-in providers (CONTRACT section 5), in
// documentation order; workers holds each one's facts.
var ProviderPresets = [...]string{"claude", "gemini", "codex", PresetMock}

// Provider template keys every provider may use, besides the keys of its
// defaults and of provider_params.
const (
	KeyPrompt     = "PROMPT"
	KeyPromptFile = "PROMPT_FILE"
	KeyInputFile  = "INPUT_FILE"
	KeyOutputFile = "OUTPUT_FILE"
	KeyModel      = "model"
)

// TemplateKeys are the provider template keys of every provider, in the
// order workers fills them.
var TemplateKeys = [...]string{KeyPrompt, KeyPromptFile, KeyInputFile, KeyOutputFile, KeyModel}

// KeyScript is the mock preset's own key (its script file), read from its
// defaults and from provider_params.
const KeyScript = "script"

// ParamKeys returns the keys a defaults or provider_params entry of the
// built-in preset name may set besides the keys of its templates: model
// (which every preset passes with its CLI's model flag) and mock's script.
func ParamKeys(name string) []string {
	if name == PresetMock {
		return []string{KeyModel, KeyScript}
	}
	return []string{KeyModel}
}

// Layer names of a payload_merge_strategy (CONTRACT 7.3). PAYLOAD and
// STATIC_MEMORY also take a ":<TYPE>"/":<key>" suffix, ARTIFACT a ":<path>",
// and PAYLOAD:LAST names the last segment.
const (
	LayerPayload  = "PAYLOAD"
	LayerContract = "CONTRACT"
	LayerMemory   = "STATIC_MEMORY"
	LayerArtifact = "ARTIFACT"
	LayerMetadata = "METADATA"
	LayerLast     = "LAST"
)

// A Layer is one layer of a payload_merge_strategy: Plain says it may
// stand alone ("CONTRACT"), Arg names the ":<arg>" it may take ("TYPE" for
// PAYLOAD:CODE_OUTPUT; "" for none).
type Layer struct {
	Name  string
	Plain bool
	Arg   string
}

// PayloadLayers are the layers of a payload_merge_strategy, in
// documentation order. The compiler checks entries with ParseLayer; the VM
// renders them.
var PayloadLayers = [...]Layer{
	{LayerPayload, true, "TYPE"},
	{LayerContract, true, ""},
	{LayerMemory, true, "KEY"},
	{LayerArtifact, false, "PATH"},
	{LayerMetadata, true, ""},
}

// ParseLayer splits a payload_merge_strategy entry into its layer name and
// argument; ok is false when no layer accepts the entry.
func ParseLayer(entry string) (name, arg string, hasArg, ok bool) {
	name, arg, hasArg = strings.Cut(entry, ":")
	for _, l := range PayloadLayers {
		if l.Name == name {
			return name, arg, hasArg, hasArg && arg != "" && l.Arg != "" || !hasArg && l.Plain
		}
	}
	return name, arg, hasArg, false
}

// LayerForms lists every form of a strategy entry for messages:
// "PAYLOAD", "PAYLOAD:TYPE", "PAYLOAD:LAST", "CONTRACT", ...
func LayerForms() []string {
	var out []string
	for _, l := range PayloadLayers {
		if l.Plain {
			out = append(out, l.Name)
		}
		if l.Arg != "" {
			out = append(out, l.Name+":"+l.Arg)
		}
		if l.Name == LayerPayload {
			out = append(out, LayerPayload+":"+LayerLast)
		}
	}
	return out
}

// DefaultPayloadMerge is the payload_merge_strategy of an AI worker that
// names none (CONTRACT 7.3).
var DefaultPayloadMerge = [...]string{LayerPayload, LayerContract, LayerMemory, LayerMetadata}

// DefaultOutputType is the segment type of an AI worker's reply when its
// output_type is not given (CONTRACT 7.1).
const DefaultOutputType = "AI_RESPONSE"

// DefaultCommandOutputType is the segment type of a command worker's
// stdout when its output_type is not given (CONTRACT 12.5).
const DefaultCommandOutputType = "COMMAND_OUTPUT"

// IsSegmentType reports whether s can name a segment type (an output_type):
// an upper-case letter, then upper-case letters, digits and _, as every
// type the contract names (AI_RESPONSE, CODE_OUTPUT, TEST_RESULT), so that
// PAYLOAD:<TYPE> can select it.
func IsSegmentType(s string) bool {
	for i, r := range s {
		if !('A' <= r && r <= 'Z' || i > 0 && (r == '_' || '0' <= r && r <= '9')) {
			return false
		}
	}
	return s != ""
}

// SegmentTypeOf is the segment type name nearest to s, for a
// did-you-mean: s upper-cased, each run of other characters one _ ("code
// output": CODE_OUTPUT); "" when that is no segment type either.
func SegmentTypeOf(s string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToUpper(s) {
		if 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			gap = false
		} else {
			gap = true
		}
	}
	if out := b.String(); IsSegmentType(out) {
		return out
	}
	return ""
}

// Special goto targets of YAML handlers (CONTRACT 3.3).
const (
	TargetEnd          = "_end"
	TargetError        = "_error"
	TargetStart        = "_start"
	TargetLoopBreak    = "_loop_break"
	TargetLoopContinue = "_loop_continue"
	TargetBranchEnd    = "_branch_end"
)
