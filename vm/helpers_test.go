package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"smith/internal/goldenfile"
	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/vm"
	"smith/workers"
	"smith/workers/step"
)

// A B is one block of a hand-built program (the test's stand-in for the
// compiler). Actions: "next" (the next block in document order, or the end
// of the loop body / node), "jump:X", "end", "fail:MSG" (MSG a template),
// "halt",
// "call:Node" (return to this block), "call:Node>X" (return_to X),
// "return", "continue", "break", "loopfail".
type B struct {
	ID        string
	Kind      isa.BlockKind // 0: command
	Agent     string
	Step      *isa.Step
	When      *isa.Cond
	MaxVisits int
	Set       []isa.Field
	Items     *isa.TValue // a loop
	As        string
	Body      []B
	On        [][2]string // signal, action
	Default   string
}

// An N is one node.
type N struct {
	ID      string
	Inherit bool
	Blocks  []B
}

// asm lays out nodes in the block shape of isa/doc.go.
type asm struct {
	p      *isa.Program
	fix    []func()
	nodeOf map[string]uint32
	idx    map[string]int
	next   map[uint32]uint32 // loop block -> pc of its LOOP_NEXT
}

func build(t testing.TB, nodes ...N) *isa.Program {
	t.Helper()
	a := &asm{p: &isa.Program{Name: "demo", Format: "workflow"}, nodeOf: map[string]uint32{}, idx: map[string]int{}, next: map[uint32]uint32{}}
	for i, n := range nodes {
		a.nodeOf[n.ID] = uint32(i)
		a.p.Nodes = append(a.p.Nodes, isa.Node{ID: n.ID, Inherit: n.Inherit})
	}
	for i, n := range nodes {
		last := "end"
		if i > 0 {
			last = "return"
		}
		a.p.Nodes[i].Entry = uint32(len(a.p.Blocks))
		a.blocks(n.Blocks, uint32(i), 0, last)
	}
	for _, f := range a.fix {
		f()
	}
	a.p.Entry = a.p.Blocks[a.p.Nodes[0].Entry].Start
	if err := a.p.Verify(); err != nil {
		t.Fatalf("build: %v", err)
	}
	return a.p
}

func (a *asm) emit(op isa.Op, x, y uint32) uint32 {
	pc := uint32(len(a.p.Code))
	a.p.Code = append(a.p.Code, isa.Instr{Op: op, A: x, B: y})
	a.p.Pos = append(a.p.Pos, source.Pos{File: "flow.yaml", Line: int(pc) + 1, Col: 1})
	return pc
}

func (a *asm) blocks(bs []B, node, parent uint32, last string) {
	for j, b := range bs {
		next := last
		if j+1 < len(bs) {
			next = "jump:" + bs[j+1].ID
		}
		a.block(b, node, parent, next)
	}
}

func (a *asm) block(b B, node, parent uint32, next string) {
	i := uint32(len(a.p.Blocks))
	kind := b.Kind
	switch {
	case b.Items != nil:
		kind = isa.KindLoop
	case b.Set != nil:
		kind = isa.KindSetContext
	case kind == 0:
		kind = isa.KindCommand
	}
	step := b.Step
	if step == nil && (kind == isa.KindCommand || kind == isa.KindProvider || kind == isa.KindInternal) {
		step = &isa.Step{}
	}
	a.idx[b.ID] = int(i)
	a.p.Blocks = append(a.p.Blocks, isa.Block{ID: b.ID, Node: node, Kind: kind, Parent: parent,
		MaxVisits: b.MaxVisits, When: b.When, Step: step, Set: b.Set, Agent: b.Agent})
	start := uint32(len(a.p.Code))
	toDispatch := func(pc uint32) { a.fix = append(a.fix, func() { a.p.Code[pc].B = a.p.Blocks[i].Dispatch }) }
	if b.MaxVisits > 0 {
		toDispatch(a.emit(isa.OpVisit, i, 0))
	}
	if b.When != nil {
		toDispatch(a.emit(isa.OpWhen, i, 0))
	}
	switch kind {
	case isa.KindSetContext:
		a.emit(isa.OpSetContext, i, 0)
	case isa.KindLoop:
		toDispatch(a.emit(isa.OpLoopBegin, i, 0))
		body := uint32(len(a.p.Code))
		a.p.Blocks[i].Loop = &isa.Loop{Items: *b.Items, As: b.As, Body: body}
		for _, c := range b.Body {
			a.p.Blocks[i].Loop.Steps = append(a.p.Blocks[i].Loop.Steps, uint32(len(a.p.Blocks)))
			a.block(c, node, i+1, "")
		}
		a.next[i] = a.emit(isa.OpLoopNext, i, body)
	default:
		a.emit(isa.OpExec, i, 0)
	}
	a.p.Blocks[i].Start = start
	t := uint32(len(a.p.Tables))
	a.p.Tables = append(a.p.Tables, isa.Table{Block: i})
	a.p.Blocks[i].Dispatch = a.emit(isa.OpDispatch, t, 0)
	if next == "" { // in a loop body: the next sibling, else LOOP_NEXT
		next = a.siblingNext(b.ID, parent-1)
	}
	for _, on := range b.On {
		pc := a.action(on[1], i, next)
		a.p.Tables[t].Entries = append(a.p.Tables[t].Entries, isa.TableEntry{Signal: on[0], PC: pc})
	}
	if b.Default != "" {
		a.p.Tables[t].Default, a.p.Tables[t].HasDefault = a.action(b.Default, i, next), true
	}
}

// siblingNext is "jump:<next sibling>" inside loop l, found after layout.
func (a *asm) siblingNext(id string, l uint32) string {
	return "sibling:" + id + ":" + strconv.Itoa(int(l))
}

func (a *asm) action(act string, i uint32, next string) uint32 {
	if act == "next" {
		act = next
	}
	kind, arg, _ := strings.Cut(act, ":")
	loopOf := func() uint32 { return a.p.Blocks[i].Parent - 1 }
	switch kind {
	case "jump":
		pc := a.emit(isa.OpJump, 0, 0)
		a.fix = append(a.fix, func() { a.p.Code[pc].A = a.p.Blocks[a.idx[arg]].Start })
		return pc
	case "sibling":
		id, l, _ := strings.Cut(arg, ":")
		li, _ := strconv.Atoi(l)
		pc := a.emit(isa.OpJump, 0, 0)
		a.fix = append(a.fix, func() {
			steps := a.p.Blocks[li].Loop.Steps
			k := slices.IndexFunc(steps, func(s uint32) bool { return a.p.Blocks[s].ID == id })
			if k+1 < len(steps) {
				a.p.Code[pc].A = a.p.Blocks[steps[k+1]].Start
			} else {
				a.p.Code[pc].A = a.next[uint32(li)]
			}
		})
		return pc
	case "continue":
		pc := a.emit(isa.OpJump, 0, 0)
		l := loopOf()
		a.fix = append(a.fix, func() { a.p.Code[pc].A = a.next[l] })
		return pc
	case "break", "loopfail":
		op := isa.OpLoopBreak
		if kind == "loopfail" {
			op = isa.OpLoopFail
		}
		l := loopOf()
		pc := a.emit(op, l, 0)
		a.fix = append(a.fix, func() { a.p.Code[pc].B = a.p.Blocks[l].Dispatch })
		return pc
	case "end":
		return a.emit(isa.OpEnd, 0, 0)
	case "fail":
		a.p.Templates = append(a.p.Templates, tpl(arg))
		return a.emit(isa.OpFail, uint32(len(a.p.Templates)-1), 0)
	case "halt":
		return a.emit(isa.OpHaltAndFlag, i, 0)
	case "return":
		return a.emit(isa.OpReturn, 0, 0)
	case "call":
		node, ret, _ := strings.Cut(arg, ">")
		pc := a.emit(isa.OpCall, a.nodeOf[node], 0)
		a.fix = append(a.fix, func() {
			if ret == "" {
				a.p.Code[pc].B = a.p.Blocks[i].Start
			} else {
				a.p.Code[pc].B = a.p.Blocks[a.idx[ret]].Start
			}
		})
		return pc
	}
	panic("bad action " + act)
}

// ok is the usual success/failure pair: success -> next, failure -> fail.
var ok = [][2]string{{vm.SigSuccess, "next"}, {vm.SigFailure, "fail:step failed"}}

// tpl parses a template with ${...} references.
func tpl(s string) lang.Template {
	var t lang.Template
	for s != "" {
		i := strings.Index(s, "${")
		if i < 0 {
			t.Parts = append(t.Parts, lang.Part{Lit: s})
			break
		}
		if i > 0 {
			t.Parts = append(t.Parts, lang.Part{Lit: s[:i]})
		}
		j := strings.Index(s[i:], "}")
		t.Parts = append(t.Parts, lang.Part{Ref: ref(s[i+2 : i+j])})
		s = s[i+j+1:]
	}
	return t
}

func ref(raw string) *lang.Ref {
	r := &lang.Ref{Raw: raw}
	for _, seg := range strings.Split(raw, ".") {
		key, rest, _ := strings.Cut(seg, "[")
		if key != "" {
			r.Path = append(r.Path, lang.PathElem{Key: key})
		}
		for rest != "" {
			n, after, _ := strings.Cut(rest, "]")
			k, _ := strconv.Atoi(n)
			r.Path = append(r.Path, lang.PathElem{Index: k, IsIndex: true})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return r
}

func tp(s string) *lang.Template { t := tpl(s); return &t }

func str(s string) isa.TValue { return isa.TValue{Kind: isa.TString, Str: tpl(s)} }

func num(n string) isa.TValue { return isa.TValue{Kind: isa.TNumber, Num: n} }

func list(vs ...isa.TValue) *isa.TValue { return &isa.TValue{Kind: isa.TList, List: vs} }

func cmd(args ...string) *isa.Step {
	s := &isa.Step{}
	for _, a := range args {
		s.Command = append(s.Command, tpl(a))
	}
	return s
}

// fake is a scripted step.Runner: results per step name, in order (the
// last repeats); unscripted steps succeed with output "out-<Step>".
type fake struct {
	script map[string][]step.Result
	calls  []string
	reqs   []*step.Request
	before func(req *step.Request) // e.g. cancel the run
}

func (f *fake) Run(ctx context.Context, req *step.Request) step.Result {
	f.calls = append(f.calls, req.Step)
	kept := *req // the machine reuses req (and its argv) after Run returns
	kept.Argv = slices.Clone(req.Argv)
	f.reqs = append(f.reqs, &kept)
	if f.before != nil {
		f.before(req)
	}
	rs := f.script[req.Step]
	n := 0
	for _, c := range f.calls {
		if c == req.Step {
			n++
		}
	}
	if len(rs) == 0 {
		return step.Result{Signal: vm.SigSuccess, Output: "out-" + req.Step, Attempts: 1, Duration: 100 * time.Millisecond}
	}
	return rs[min(n, len(rs))-1]
}

// req returns the last request of step name.
func (f *fake) req(t *testing.T, name string) *step.Request {
	t.Helper()
	for i := len(f.reqs) - 1; i >= 0; i-- {
		if f.reqs[i].Step == name {
			return f.reqs[i]
		}
	}
	t.Fatalf("step %q was not run (calls %v)", name, f.calls)
	return nil
}

func fail(code int) step.Result {
	return step.Result{Signal: vm.SigFailure, ExitCode: code, Attempts: 1, Duration: 100 * time.Millisecond}
}

// rec records a run: events, deltas (as JSON) and the checkpoints' states.
type rec struct {
	events  []vm.Event
	deltas  [][]byte
	st      *vm.State
	err     error
	killAt  int // Checkpoint fails at this seq (0: never)
	console []string
}

func clock() func() time.Time {
	t := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

// clocked is this machine's Host with a test clock.
type clocked struct {
	workers.Local
	now func() time.Time
}

func (h clocked) Now() time.Time { return h.now() }

// config returns a Config wired to r and f.
func (r *rec) config(f *fake) vm.Config {
	return vm.Config{
		Registry: f,
		Host:     clocked{now: clock()},
		RunID:    "r1",
		Events: func(e vm.Event) {
			r.events = append(r.events, e)
			r.console = append(r.console, e.Console())
		},
		Checkpoint: func(d *vm.Delta, st *vm.State) error {
			if r.killAt > 0 && d.Seq >= r.killAt {
				return fmt.Errorf("killed")
			}
			b, err := json.Marshal(d)
			if err != nil {
				return err
			}
			r.deltas = append(r.deltas, b)
			return nil
		},
	}
}

// run runs p with cfg.
func run(t *testing.T, p *isa.Program, f *fake, edit func(*vm.Config)) *rec {
	t.Helper()
	r := &rec{}
	cfg := r.config(f)
	if edit != nil {
		edit(&cfg)
	}
	m, err := vm.New(p, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.st, r.err = m.Run(context.Background())
	return r
}

// rebuilt replays the recorded deltas over an empty State.
func (r *rec) rebuilt(t *testing.T) *vm.State {
	t.Helper()
	st := &vm.State{}
	for _, b := range r.deltas {
		var d vm.Delta
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("unmarshal delta: %v", err)
		}
		st.Apply(&d)
	}
	return st
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

// checkRebuilt asserts that the deltas rebuild the final state exactly.
func checkRebuilt(t *testing.T, r *rec) {
	t.Helper()
	st := r.rebuilt(t)
	got, want := jsonOf(t, st), jsonOf(t, r.st)
	if got != want {
		t.Errorf("state rebuilt from deltas differs from the final state:\n%s", goldenfile.FirstDiff(got, want))
	}
	// Apply is idempotent: replaying the journal again changes nothing.
	for _, b := range r.deltas {
		var d vm.Delta
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		st.Apply(&d)
	}
	if again := jsonOf(t, st); again != want {
		t.Errorf("replaying the deltas twice changed the state:\n%s", goldenfile.FirstDiff(again, want))
	}
}

func codeOf(err error) source.Code {
	if c, ok := err.(source.Coded); ok {
		return c.ErrCode()
	}
	return ""
}
