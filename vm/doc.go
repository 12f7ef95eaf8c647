// Package vm runs a compiled isa.Program: the Smith machine.
//
// # Registers and stacks
//
// A Machine keeps its registers in a State, which is plain data (state.json)
// and holds no pc:
//
//   - pc: a local of the run loop only. What survives is CurrentStep (a
//     step or block id) and Phase: "start" re-enters the block at its first
//     instruction (it runs again), "dispatch" at its DISPATCH with the saved
//     Signal (it does not run again), "body" re-enters a loop at the first
//     instruction of its body for the iteration the top loop frame names.
//     Resume maps these names to pcs of the program it is given, which may
//     have been recompiled from a changed workflow.
//   - Signal: the signal the last EXEC, WHEN, VISIT, SET_CONTEXT or loop
//     instruction produced.
//   - the return stack: CALL pushes a ReturnFrame {return block, node, the
//     caller's payload when the callee does not inherit context}; RETURN
//     pops it, restores the payload plus the callee's last segment and
//     re-enters the return block. RETURN with an empty stack completes the
//     run.
//   - the loop stack: LOOP_BEGIN pushes a LoopFrame {loop, index, total,
//     items}; LOOP_NEXT closes the iteration (its record goes to the loop's
//     StepResult, the last MaxInlineIterations inline) and starts the next,
//     resetting the body's step results so that ${steps.Inner...} means the
//     current iteration; LOOP_BREAK and LOOP_FAIL pop it.
//
// # How a signal selects a transition
//
// DISPATCH looks the signal up in the block's transition table: the exact
// signal first; for SIGNAL:TIMEOUT then SIGNAL:FAILURE; then the table's
// default (SIGNAL:FAIL_DEFAULT, on.always, the strict-flow default). When
// none matches the run fails with E_NO_TRANSITION. A worker failure is data:
// it only sets the signal.
//
// # Workers, prompts and replies
//
// EXEC substitutes the block's templates, builds a step.Request and
// hands it to Config.Registry. For an AI worker the VM first assembles the
// prompt from the block's payload_merge_strategy layers (prompt.go:
// PAYLOAD, PAYLOAD:<TYPE>, PAYLOAD:LAST, CONTRACT, STATIC_MEMORY,
// STATIC_MEMORY:<key>, ARTIFACT:<path>, METADATA), deterministically, with
// static memory merged along the call chain. After the worker returns, a
// reply whose last non-empty line is SIGNAL:NAME takes that signal; with a
// validation schema the cleaned reply is validated (validate.go), and a
// failure becomes SIGNAL:VALIDATION_FAIL plus a VALIDATION_ERROR segment.
// The reply becomes a payload segment of the worker's output type.
// docs/prompts.md and docs/manifests.md describe the formats.
//
// # Persistence
//
// After every change that must survive a crash the machine calls
// Config.Checkpoint with a Delta: only what changed (registers, the loop
// stack without its items, one step result, one closed iteration record,
// appended payload segments, ...), so its size does not grow with the run.
// State.Apply replays deltas over a snapshot. Events are sent after the
// checkpoint that covers their seq, so seqs never repeat across a crash.
//
// # Ends of a run
//
// Run and Resume return the final State. A completed run returns nil; a
// failure, E_NO_TRANSITION, the step budget, cancellation (status
// interrupted) or a bad state return a *RuntimeError with its code; a
// HALT_AND_FLAG returns an error wrapping ErrHalted (exit status 4).
package vm
