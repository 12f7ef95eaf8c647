package vm

import (
	"slices"
	"strings"

	"smith/isa"
	"smith/lang"
	"smith/source"
)

// ResumeBlock is the block a resume of st re-enters: the halted block of
// a halted run, else its current step.
func ResumeBlock(st *State) string {
	if st.HaltedBlock != "" {
		return st.HaltedBlock
	}
	return st.CurrentStep
}

// CheckResumeSignal returns the E_UNKNOWN_SIGNAL error of a resume of st
// with --signal sig that the block it re-enters does not name in its
// transitions (a YAML step: in its on.signals and its outcomes), or nil.
// The error lists the accepted signals and suggests the nearest one; a
// name without its SIGNAL: prefix is matched with it. Resume checks it
// before it changes anything, so a refused run stays as it was.
func CheckResumeSignal(p *isa.Program, st *State, sig string) error {
	if sig == "" {
		return nil
	}
	block := ResumeBlock(st)
	if !slices.ContainsFunc(p.Blocks, func(b isa.Block) bool { return b.ID == block }) {
		// The workflow lost the block: the re-entry says so
		// (E_STATE_CORRUPT), not an unknown signal.
		return nil
	}
	ok := p.Signals(block)
	for _, s := range ok {
		if s == sig {
			return nil
		}
	}
	msg := "signal '" + sig + "' is not one that '" + block + "' accepts"
	if len(ok) == 0 {
		msg += ": it has no transitions to take"
	} else {
		msg += " (it accepts " + strings.Join(ok, ", ") + ")"
	}
	hint := suggestSignal(sig, ok)
	if hint != "" {
		msg += "; did you mean '" + hint + "'?"
	}
	return &source.Error{Code: source.EUnknownSignal, Msg: msg, Hint: "the run is unchanged"}
}

// suggestSignal is the accepted signal nearest to sig: sig with the
// SIGNAL: prefix it lacks, else the nearest by edit distance (on the names
// without the prefix, so SIGNAL:APROVED finds SIGNAL:APPROVED).
func suggestSignal(sig string, ok []string) string {
	name := strings.TrimPrefix(strings.ToUpper(sig), lang.SignalPrefix)
	bare := make([]string, len(ok))
	for i, s := range ok {
		bare[i] = strings.TrimPrefix(s, lang.SignalPrefix)
		if bare[i] == name {
			return s
		}
	}
	if s := source.Suggest(name, bare); s != "" {
		return lang.SignalPrefix + s
	}
	return ""
}
