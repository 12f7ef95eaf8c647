package isa

import "fmt"

// An Op is an opcode. Numbers are part of the .smbc format: new opcodes go
// at the end and none is ever renumbered.
type Op uint8

// The opcodes. A and B are the operands of Instr.
const (
	OpInvalid     Op = iota // never runs: zeroed code is invalid
	OpJump                  // A = pc; jump to A
	OpCall                  // A = node, B = return pc; push a frame {B, node, saved payload}, jump to the node's entry block
	OpReturn                // pop a frame and jump to its return pc; with an empty stack, end the run in success
	OpHaltAndFlag           // A = block; save state halted at block A and stop (exit 4)
	OpEnd                   // end the run in success
	OpFail                  // A = template (message); end the run in failure with the substituted message (exit 124 when the signal is SIGNAL:TIMEOUT, 3 when the failed step's error is E_PATH_ESCAPE, else 1)
	OpExec                  // A = block; run the block's worker, set the signal register from its result
	OpDispatch              // A = table; jump to the pc of the transition the signal register selects (exact, TIMEOUT then FAILURE, then the default)
	OpWhen                  // A = block, B = pc; evaluate the block's condition; false: record the block skipped, signal := SIGNAL:SKIPPED, jump to B
	OpVisit                 // A = block, B = pc; count a visit of block A; past its max_visits: signal := SIGNAL:MAX_VISITS, jump to B
	OpSetContext            // A = block; merge the block's set_context values into the context, signal := SIGNAL:SUCCESS
	OpLoopBegin             // A = block (loop), B = pc; evaluate the items and push a loop frame; no items: signal := SIGNAL:SUCCESS, jump to B
	OpLoopNext              // A = block (loop), B = pc (body); close the iteration; more items: start the next one, jump to B; else pop, signal := SIGNAL:SUCCESS
	OpLoopBreak             // A = block (loop), B = pc; close the iteration, pop the loop frame, signal := SIGNAL:SUCCESS, jump to B
	OpLoopFail              // A = block (loop), B = pc; close the iteration as failed, pop the loop frame, signal := SIGNAL:FAILURE, jump to B
	OpParBegin              // A = block (parallel), B = pc; run the block's branches as threads, join them, set the signal, jump to B
	OpBranchEnd             // A = block (parallel); end the current thread's branch of A in success
	OpBranchFail            // A = block (parallel); end the current thread's branch of A in failure
	OpEndStep               // A = block; end the run with block A's outcome: success for SIGNAL:SUCCESS or SIGNAL:SKIPPED, else failure (Program.Only)
	opCount
)

// An Operand kind says what an operand indexes.
type Operand uint8

// Operand kinds.
const (
	NoOperand   Operand = iota
	PC                  // an index into Code
	NodeIdx             // an index into Nodes
	BlockIdx            // an index into Blocks
	TableIdx            // an index into Tables
	StringIdx           // an index into Strings
	TemplateIdx         // an index into Templates
)

// String names the operand kind as the docs do.
func (o Operand) String() string {
	names := [...]string{"-", "pc", "node", "block", "table", "string", "template"}
	if int(o) >= len(names) {
		return fmt.Sprintf("Operand(%d)", uint8(o))
	}
	return names[o]
}

// OpInfo is everything known about one opcode.
type OpInfo struct {
	Name string // the mnemonic, as the manifest DSL spells it where it has one
	A, B Operand
	Doc  string
}

// opTable is the one table of opcode facts, indexed by Op.
var opTable = [opCount]OpInfo{
	OpInvalid:     {"INVALID", NoOperand, NoOperand, "never runs; zeroed code is invalid"},
	OpJump:        {"JUMP", PC, NoOperand, "jump to A"},
	OpCall:        {"CALL", NodeIdx, PC, "push a frame {return pc B, node A, the caller's payload when A does not inherit context}; jump to A's entry block"},
	OpReturn:      {"RETURN", NoOperand, NoOperand, "pop a frame and jump to its return pc (restoring a saved payload); with an empty return stack, end the run in success"},
	OpHaltAndFlag: {"HALT_AND_FLAG", BlockIdx, NoOperand, "save the state as halted at block A and stop with exit 4; resume re-runs A, or takes A's transition for --signal"},
	OpEnd:         {"END", NoOperand, NoOperand, "end the run in success"},
	OpFail:        {"FAIL", TemplateIdx, NoOperand, "A = template (message); end the run in failure with the substituted message; exit 124 when the signal register is SIGNAL:TIMEOUT, 3 when the failed step's error is E_PATH_ESCAPE, else 1"},
	OpExec:        {"EXEC", BlockIdx, NoOperand, "run block A's worker (process, provider, internal or AI worker) and set the signal register from its result"},
	OpDispatch:    {"DISPATCH", TableIdx, NoOperand, "jump to the pc that transition table A selects for the signal register: the exact signal, then SIGNAL:FAILURE for SIGNAL:TIMEOUT, then the default (SIGNAL:FAIL_DEFAULT); none: E_NO_TRANSITION"},
	OpWhen:        {"WHEN", BlockIdx, PC, "evaluate block A's condition; when false, record A as skipped, set the signal to SIGNAL:SKIPPED and jump to B"},
	OpVisit:       {"VISIT", BlockIdx, PC, "count a visit of block A; past its max_visits, set the signal to SIGNAL:MAX_VISITS and jump to B"},
	OpSetContext:  {"SET_CONTEXT", BlockIdx, NoOperand, "merge block A's set_context values (dotted keys allowed) into the context; signal := SIGNAL:SUCCESS"},
	OpLoopBegin:   {"LOOP_BEGIN", BlockIdx, PC, "evaluate loop A's items and push a loop frame at iteration 0; with no items, signal := SIGNAL:SUCCESS and jump to B"},
	OpLoopNext:    {"LOOP_NEXT", BlockIdx, PC, "close the current iteration of loop A; if items remain, start the next and jump to B (the body); else pop the frame and set the signal to SIGNAL:SUCCESS"},
	OpLoopBreak:   {"LOOP_BREAK", BlockIdx, PC, "close the current iteration of loop A, pop its frame, set the signal to SIGNAL:SUCCESS and jump to B"},
	OpLoopFail:    {"LOOP_FAIL", BlockIdx, PC, "close the current iteration of loop A as failed, pop its frame, set the signal to SIGNAL:FAILURE and jump to B"},
	OpParBegin:    {"PAR_BEGIN", BlockIdx, PC, "run the branches of parallel block A as threads (at most its max at once), join them in branch-name order, set the signal to SIGNAL:SUCCESS (every branch succeeded) or SIGNAL:FAILURE and jump to B"},
	OpBranchEnd:   {"BRANCH_END", BlockIdx, NoOperand, "end the current thread (a branch of parallel block A) in success"},
	OpBranchFail:  {"BRANCH_FAIL", BlockIdx, NoOperand, "end the current thread (a branch of parallel block A) in failure"},
	OpEndStep:     {"END_STEP", BlockIdx, NoOperand, "end the run with block A's outcome (Program.Only, smithvm run-step): in success when the signal register is SIGNAL:SUCCESS or SIGNAL:SKIPPED, else in failure with \"step 'A' ended with SIGNAL\", exit as for FAIL"},
}

// NumOps is the number of defined opcodes, OpInvalid included.
const NumOps = int(opCount)

// Info returns the table row of op, and false for an undefined value.
func (op Op) Info() (OpInfo, bool) {
	if op >= opCount {
		return OpInfo{}, false
	}
	return opTable[op], true
}

// String returns the mnemonic, or Op(N) for an undefined value.
func (op Op) String() string {
	if op >= opCount {
		return fmt.Sprintf("Op(%d)", uint8(op))
	}
	return opTable[op].Name
}

// OpByName returns the opcode with mnemonic name.
func OpByName(name string) (Op, bool) {
	for i := range opTable {
		if opTable[i].Name == name {
			return Op(i), true
		}
	}
	return OpInvalid, false
}

// An Instr is one fixed-width instruction.
type Instr struct {
	Op Op
	A  uint32
	B  uint32
}
