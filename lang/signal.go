package lang

// SignalPrefix starts every signal's name.
const SignalPrefix = "SIGNAL:"

// Reserved signals: the signals the VM, the compiler and the workers give
// a meaning to (CONTRACT section 4).
const (
	SigSuccess        = "SIGNAL:SUCCESS"
	SigFailure        = "SIGNAL:FAILURE"
	SigTimeout        = "SIGNAL:TIMEOUT"
	SigSkipped        = "SIGNAL:SKIPPED"
	SigValidationFail = "SIGNAL:VALIDATION_FAIL"
	SigMaxVisits      = "SIGNAL:MAX_VISITS"
	// SigFailDefault is the key of a block's fallback transition: no worker
	// emits it, and it is not in ReservedSignals.
	SigFailDefault = "SIGNAL:FAIL_DEFAULT"
)

// ReservedSignals lists the reserved signals a block can emit, the ones the
// VM itself gives a meaning to.
var ReservedSignals = [...]string{
	SigSuccess, SigFailure, SigTimeout, SigSkipped, SigValidationFail, SigMaxVisits,
}

// IsReserved reports whether sig is one of ReservedSignals.
func IsReserved(sig string) bool {
	for _, s := range ReservedSignals {
		if s == sig {
			return true
		}
	}
	return false
}

// Dispatch is the one DISPATCH fallback rule: the transition a block takes
// when it emits sig is sig's own, else (for SIGNAL:TIMEOUT) the one of
// SIGNAL:FAILURE, else the one of SIGNAL:FAIL_DEFAULT. find looks one
// signal up in the block's transitions. The VM's dispatch, the compiler's
// liveness and fallback checks and the DOT drawing all call it.
func Dispatch[T any](sig string, find func(sig string) (T, bool)) (T, bool) {
	if v, ok := find(sig); ok {
		return v, true
	}
	if sig == SigTimeout {
		if v, ok := find(SigFailure); ok {
			return v, true
		}
	}
	return find(SigFailDefault)
}
