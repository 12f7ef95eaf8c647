// Package isa defines the Smith machine: its opcodes (op.go, one table of
// facts indexed by Op), the Program (code, one source position per
// instruction, pools of plain data), verification, the disassembler, the
// assembly text it prints and reads back, and the versioned .smbc encoding.
//
// The machine has these registers and stacks:
//
//   - pc: the index of the next instruction in Code.
//   - signal: the signal the last EXEC, WHEN, VISIT, SET_CONTEXT or loop
//     instruction produced ("SIGNAL:SUCCESS", a custom signal, ...).
//   - the return stack: CALL pushes a frame {return pc, node, saved payload};
//     RETURN pops it. RETURN with an empty stack ends the run in success.
//   - the loop stack: LOOP_BEGIN pushes a frame {loop block, items, index};
//     LOOP_NEXT advances it; LOOP_NEXT past the last item, LOOP_BREAK and
//     LOOP_FAIL pop it.
//
// Each source block compiles to the same shape:
//
//	start:    VISIT    b, dispatch      (when the block has max_visits)
//	          WHEN     b, dispatch      (when the block has a condition)
//	          EXEC     b                (or SET_CONTEXT, or LOOP_BEGIN + body + LOOP_NEXT)
//	dispatch: DISPATCH table
//	          one action instruction per distinct transition target
//	          (JUMP, CALL, RETURN, HALT_AND_FLAG, END, FAIL, LOOP_*)
//
// DISPATCH selects a transition for the signal register: the exact signal
// first; for SIGNAL:TIMEOUT, then SIGNAL:FAILURE; then the table's default
// (the manifest's SIGNAL:FAIL_DEFAULT, YAML's on.always or strict-flow
// default). A checked program always finds one; E_NO_TRANSITION remains the
// VM's guard.
package isa
