package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"smith/compiler/ir"
	"smith/isa"
	"smith/lang"
	"smith/manifest"
	"smith/source"
)

// LowerWorkflow lowers a YAML step workflow to the IR (CONTRACT section 3):
// one Node named after the workflow whose Blocks are its steps, with every
// outcome handler resolved to a Transition by YAML's fallback rules. It
// checks names, targets, workers, providers, schemas, ${...} references,
// literal paths and values, and reports every problem it finds; the
// program is complete (every block has its transitions) even when there
// are diagnostics, but only a program without errors may be run.
func LowerWorkflow(wf *manifest.Workflow, opt Options) (*ir.Program, source.Diagnostics) {
	if wf == nil {
		return nil, nil
	}
	if wf.Isolation.V == lang.IsolationWorktree {
		opt.Layout = nil // its WORKSPACE is its worktree, made when it starts
	}
	y := &yamlLowerer{lowerer: newLowerer(wf.File, opt), wf: wf, strict: !wf.StrictFlow.Set || wf.StrictFlow.V}
	l := y.lowerer
	l.providers = sortedProviders(wf.Providers)
	data := &isa.Program{
		Name:       wf.Name.V,
		Format:     ir.YAML.String(),
		Source:     wf.File,
		StrictFlow: y.strict,
	}
	l.runWide(data, wf.Secrets, wf.EnvAllow, wf.Env)
	l.checkDefaults(wf.Defaults)
	data.Config = lang.Config{
		TestCommand:     rawStrings(wf.TestCommand),
		LintCommand:     rawStrings(wf.LintCommand),
		BuildCommand:    rawStrings(wf.BuildCommand),
		Isolation:       wf.Isolation.V,
		CommitArtifacts: wf.CommitArtifacts.V,
	}
	l.config = data.Config
	data.Schemas = l.lowerSchemas(wf.Schemas)
	l.contextKeys = mapKeys(wf.Context.V)
	l.yaml = true
	y.collect(wf.Steps)
	if wf.Context.V != nil {
		ctx := l.tvalue(wf.Context.V, &scope{})
		data.Context = &ctx
	}
	data.Agents = y.lowerAgents(y.wf.Agents)

	top := y.lowerList(wf.Steps, &scope{})
	data.Providers = l.lowerProviders()

	node := &ir.Node{ID: wf.Name.V, Pos: wf.Pos, StaticMemory: "", Blocks: top}
	p := &ir.Program{Name: wf.Name.V, Format: ir.YAML, File: wf.File, Nodes: []*ir.Node{node}, Data: data}
	if len(top) > 0 {
		node.Entry = top[0].ID
		p.Entry, p.EntryPos = top[0].ID, top[0].Pos
	}
	l.diags.Sort()
	return p, l.diags
}

// A yamlLowerer lowers one workflow.
type yamlLowerer struct {
	*lowerer
	wf     *manifest.Workflow
	strict bool
	// top are the names of the top-level steps, in order.
	top []string
}

// collect walks every step (loop bodies included) once before lowering:
// it reports duplicate names and gathers the step names and the context
// keys that set_context steps write.
func (y *yamlLowerer) collect(steps []*manifest.Step) {
	first := map[string]source.Pos{}
	var walk func([]*manifest.Step)
	walk = func(steps []*manifest.Step) {
		for _, s := range steps {
			if s == nil || !s.Name.Set {
				continue
			}
			if at, dup := first[s.Name.V]; dup {
				y.errorf(s.Name.Pos, source.EDupStep, "step name '%s' is already used at %s", s.Name.V, at)
			} else {
				first[s.Name.V] = s.Name.Pos
				y.addStep(s.Name.V)
			}
			if s.OutputCapture.V == "json" {
				if y.jsonSteps == nil {
					y.jsonSteps = map[string]bool{}
				}
				y.jsonSteps[s.Name.V] = true
			}
			if v := s.SetContext.V; v != nil && v.Kind == manifest.KMap {
				for _, e := range v.Map {
					k, _, _ := strings.Cut(e.Key, ".")
					if !contains(y.contextKeys, k) {
						y.contextKeys = append(y.contextKeys, k)
					}
				}
			}
			if s.ForEach != nil {
				walk(s.ForEach.Steps)
			}
			if s.Parallel != nil {
				for _, br := range s.Parallel.Order {
					walk(br.Steps)
				}
			}
		}
	}
	walk(steps)
	for _, s := range steps {
		if s != nil && s.Name.Set {
			y.top = append(y.top, s.Name.V)
		}
	}
}

// kindOf returns what s runs (a worker: isa.KindInternal), or 0 when s
// names none or several of the kinds (the schema reports it). A step with
// an agent and no kind of its own is a provider step that uses the agent's
// provider.
func kindOf(s *manifest.Step) isa.BlockKind {
	var k isa.BlockKind
	n := 0
	for _, c := range []struct {
		set  bool
		kind isa.BlockKind
	}{
		{s.Command.Set, isa.KindCommand},
		{s.Provider.Set, isa.KindProvider},
		{s.Worker.Set, isa.KindInternal},
		{s.ForEach != nil, isa.KindLoop},
		{s.SetContext.V != nil, isa.KindSetContext},
		{s.Send != nil, isa.KindSend},
		{s.Parallel != nil, isa.KindParallel},
	} {
		if c.set {
			k, n = c.kind, n+1
		}
	}
	switch {
	case n == 0 && s.Agent.Set:
		return isa.KindProvider
	case n != 1:
		return 0
	}
	return k
}

// A stepList is one list of steps (the top level, a loop body or a
// parallel branch), for resolving handlers.
type stepList struct {
	names    []string
	set      map[string]bool // names, for lookups
	inLoop   bool
	inBranch bool
	// thread: the list runs in a parallel iteration or branch (at any
	// depth), where _end is refused.
	thread bool
}

// lowerList lowers one step list. Steps without a name are left to the
// schema.
func (y *yamlLowerer) lowerList(steps []*manifest.Step, sc *scope) []*ir.Block {
	list := &stepList{inLoop: sc.list == listLoop, inBranch: sc.list == listBranch, thread: sc.thread, set: map[string]bool{}}
	var named []*manifest.Step
	for _, s := range steps {
		if s != nil && s.Name.Set {
			named = append(named, s)
			list.names = append(list.names, s.Name.V)
			list.set[s.Name.V] = true
		}
	}
	blocks := make([]*ir.Block, 0, len(named))
	for i, s := range named {
		b, ssc := y.lowerStep(s, sc)
		b.Transitions = y.transitions(s, list, i, ssc)
		if readsReply(b) {
			if i == 0 || !linkReply(blocks[i-1], b) {
				y.errorf(stepPos(s), source.ENoReply, "step '%s' runs %s, which reads the reply of the step before it, but %s (put it right after the provider step whose reply it takes)",
					s.Name.V, b.Spec.Step.Worker, noReplyReason(blocks, i))
			}
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// stepPos is the position a step's diagnostics use.
func stepPos(s *manifest.Step) source.Pos {
	if s.Pos.IsValid() {
		return s.Pos
	}
	return s.Name.Pos
}

// lowerStep lowers one step (and a loop's body) to a block. It also returns
// the step's scope, in which its error messages are checked.
func (y *yamlLowerer) lowerStep(s *manifest.Step, sc *scope) (*ir.Block, *scope) {
	name, pos := s.Name.V, stepPos(s)
	b := &ir.Block{ID: name, Pos: pos}
	spec := &isa.Block{ID: name, Pos: pos}
	b.Spec = spec
	ssc := &scope{loops: sc.loops, agent: s.Agent.Set, allow: y.allowList(s.AllowMissingVars)}
	agent := y.agentRef(s.Agent)
	if agent != nil {
		spec.Agent = agent.Key
	}
	if s.MaxVisits.Set {
		b.MaxVisits = y.limitedInt(s.MaxVisits, "max_visits", "Step", "max_visits")
		spec.MaxVisits = b.MaxVisits
	}
	if s.When != nil {
		if c := y.cond(s.When, ssc); c != nil {
			spec.When, b.HasWhen = c, true
		}
	}

	kind := kindOf(s)
	b.Kind = kind
	y.checkUnusedKeys(s, kind)
	switch kind {
	case isa.KindSetContext:
		spec.Set = y.fields(s.SetContext.V, ssc)
		// A value whose reference cannot be resolved at run time fails it.
		b.Signals = []string{lang.SigSuccess, lang.SigFailure}
	case isa.KindLoop:
		as := "item"
		if s.ForEach.As.Set && s.ForEach.As.V != "" {
			as = s.ForEach.As.V
			y.checkLoopAs(s.ForEach.As)
		}
		spec.Loop = &isa.Loop{Items: y.loopItems(s.ForEach, ssc), As: as}
		if s.ForEach.Parallel.Set {
			spec.Loop.Parallel = y.limitedInt(s.ForEach.Parallel, "for_each.parallel", "ForEach", "parallel")
		}
		b.Body = y.lowerList(s.ForEach.Steps, sc.inner(as, spec.Loop.Parallel > 1))
		b.Signals = []string{lang.SigSuccess, lang.SigFailure}
	case isa.KindParallel:
		if sc.thread {
			y.errorf(pos, source.ENestedPar, "parallel step '%s' is inside a parallel iteration or branch: threads do not start threads (run its branches as steps, or move it to the top level)", name)
		}
		spec.Par = &isa.Par{}
		if s.Parallel.Max.Set {
			spec.Par.Max = y.limitedInt(s.Parallel.Max, "parallel.max", "Parallel", "max")
		}
		brs := slices.Clone(s.Parallel.Order)
		slices.SortFunc(brs, func(a, b *manifest.Branch) int { return strings.Compare(a.Name, b.Name) })
		for _, br := range brs {
			b.Branches = append(b.Branches, &ir.Branch{Name: br.Name, Pos: br.Pos, Body: y.lowerList(br.Steps, sc.branch())})
		}
		b.Signals = []string{lang.SigSuccess, lang.SigFailure}
	case isa.KindSend:
		b.Worker = "send"
		spec.Step = &isa.Step{AllowMissing: ssc.allow, Send: y.send(s.Send, ssc)}
		b.Signals = []string{lang.SigSuccess, lang.SigFailure}
	case 0:
		// The schema reports the step's shape; a no-op keeps the program whole.
		b.Kind = isa.KindSetContext
		b.Signals = []string{lang.SigSuccess}
	default:
		spec.Step = y.lowerExec(s, kind, agent, b, spec, ssc)
		b.Signals = []string{lang.SigSuccess, lang.SigFailure, lang.SigTimeout}
		if spec.Step.Validation != "" || (kind == isa.KindInternal && contains(workerSignals(s.Worker.V), lang.SigValidationFail)) {
			b.Signals = append(b.Signals, lang.SigValidationFail)
		}
	}
	if b.HasWhen {
		b.Signals = append(b.Signals, lang.SigSkipped)
	}
	if b.MaxVisits > 0 {
		b.Signals = append(b.Signals, lang.SigMaxVisits)
	}
	return b, ssc
}

// replyReaders are the internal workers that, in a YAML workflow, take
// their input from the reply of the provider step before them (CONTRACT
// 12.5; in a manifest, from the payload).
var replyReaders = [...]string{lang.InternalPrefix + "FileSystemWriter", lang.InternalPrefix + "DocumentationWriter",
	lang.InternalPreambleValidator, lang.InternalUpdateChangePlan}

// readsReply reports whether block b runs one of replyReaders.
func readsReply(b *ir.Block) bool {
	return b.Spec != nil && b.Spec.Step != nil && slices.Contains(replyReaders[:], b.Spec.Step.Worker)
}

// linkReply lets a YAML step of replyReaders read the reply of the provider
// step before it (CONTRACT 12.5): the reader names the step, and the step
// keeps its whole reply. It reports false when prev is no provider step.
func linkReply(prev, b *ir.Block) bool {
	spec, pspec := b.Spec, prev.Spec
	if spec == nil || pspec == nil || spec.Step == nil || pspec.Step == nil || prev.Kind != isa.KindProvider {
		return false
	}
	spec.Step.ReplyFrom, pspec.Step.KeepReply = prev.ID, true
	return true
}

// noReplyReason says why the step at i of blocks has no reply to read.
func noReplyReason(blocks []*ir.Block, i int) string {
	if i == 0 {
		return "it is the first step of its list"
	}
	return "the step before it, '" + blocks[i-1].ID + "', is not a provider step"
}

// workerSignals returns the signals of an internal worker (nil if unknown).
func workerSignals(worker string) []string {
	if w := lang.LookupInternal(worker); w != nil {
		return w.Signals
	}
	return nil
}

// checkUnusedKeys reports the keys that only a provider step reads (its
// prompt and how it reaches the CLI) on a step of another kind, and the
// keys of a process (timeout, files, env, ...) on a step that runs none
// (loop, set_context, send, parallel), where they would be ignored. Which
// keys those are, the step tags of manifest.Step say.
func (y *yamlLowerer) checkUnusedKeys(s *manifest.Step, kind isa.BlockKind) {
	var runs string
	switch kind {
	case 0, isa.KindProvider:
		return
	case isa.KindCommand:
		runs = "a command"
	case isa.KindInternal:
		runs = s.Worker.V
	case isa.KindLoop:
		runs = "a for_each loop"
	case isa.KindSetContext:
		runs = "set_context"
	case isa.KindSend:
		runs = "send"
	case isa.KindParallel:
		runs = "parallel"
	}
	for _, k := range manifest.StepKeys(manifest.StepProvider) {
		if pos, set := s.Has(k); set {
			y.errorf(pos, source.ESchema, "'%s' is read only by a provider step; step '%s' runs %s (remove it, or give the step provider: NAME)", k.Key, s.Name.V, runs)
		}
	}
	if kind == isa.KindCommand || kind == isa.KindInternal {
		return
	}
	for _, k := range manifest.StepKeys(manifest.StepProcess) {
		if pos, set := s.Has(k); set {
			y.errorf(pos, source.ESchema, "'%s' applies to a step that runs a process (command, provider or worker); step '%s' runs %s, which would ignore it (move it to the steps it is meant for)", k.Key, s.Name.V, runs)
		}
	}
}

// lowerExec builds the run-time spec of a step that runs a worker.
func (y *yamlLowerer) lowerExec(s *manifest.Step, kind isa.BlockKind, agent *manifest.Agent, b *ir.Block, spec *isa.Block, sc *scope) *isa.Step {
	st := &isa.Step{AllowMissing: sc.allow}
	switch kind {
	case isa.KindCommand:
		b.Worker = "command"
		st.Command = y.templates(s.Command, sc)
	case isa.KindInternal:
		b.Worker = s.Worker.V
		st.Worker = s.Worker.V
		if lang.LookupInternal(s.Worker.V) == nil {
			y.errorf(s.Worker.Pos, source.EUnknownWorker, "worker '%s' is not an internal worker%s",
				s.Worker.V, source.DidYouMeanOrList(s.Worker.V, lang.InternalNames(), "the internal workers are"))
		}
		y.checkToolConfig(s.Worker.V, s.Worker.Pos)
	case isa.KindProvider:
		b.AI = true
		y.lowerProvider(s, agent, st, sc)
		b.Worker = "provider:" + strings.Join(st.Providers, ",")
	}
	st.InputFile = y.templatePtr(s.InputFile, sc)
	y.checkPath(st.InputFile, s.InputFile.Pos)
	st.OutputFile = y.templatePtr(s.OutputFile, sc)
	y.checkOutputPath(st.OutputFile, s.Name.V, s.OutputFile.Pos)
	st.OutputCapture = s.OutputCapture.V
	st.AllowParseError = s.AllowParseError.V
	st.Validation = y.checkSchema(s.ValidationSchema)
	layers := []execLayer{{model: modelOf(s.Model, s.ProviderParams), permissions: s.Permissions, timeout: s.Timeout, retry: s.Retry, object: "Step"}}
	if agent != nil {
		layers = append(layers, execLayer{model: agent.Model, permissions: agent.Permissions})
	}
	y.applyLayers(st, sc, append(layers, defaultsLayer(y.wf.Defaults))...)
	st.Env = y.env(s.Env, sc)
	if s.Secrets.Set {
		st.HasSecrets = true
		st.Secrets = y.declaredSecrets(s.Secrets, "step")
	}
	st.WaitFor = y.waitFor(s.WaitFor, sc)
	y.checkConsume(s.WaitFor, agent)
	st.DependsOn = y.dependsOn(s.DependsOn, sc)
	return st
}

// lowerProvider fills the provider fields of a provider step.
func (y *yamlLowerer) lowerProvider(s *manifest.Step, agent *manifest.Agent, st *isa.Step, sc *scope) {
	params := mapKeys(s.ProviderParams.V)
	if s.Provider.Set {
		st.Providers = y.checkProviders(s.Provider, params)
		y.checkStepContinues(agent, s.Provider)
	} else if agent != nil {
		known := y.providerNames()
		for _, p := range agent.Provider.V {
			st.Providers = append(st.Providers, p.V)
			if contains(known, p.V) {
				y.paramKeys[p.V] = append(y.paramKeys[p.V], params...)
			}
		}
	}
	st.Prompt = y.templatePtr(s.Prompt, sc)
	st.PromptFile = y.templatePtr(s.PromptFile, sc)
	y.checkPath(st.PromptFile, s.PromptFile.Pos)
	st.ProviderParams = y.fields(s.ProviderParams.V, sc)
	if script := s.ProviderParams.V.Get(lang.KeyScript); script != nil && script.Kind == manifest.KString && contains(st.Providers, lang.PresetMock) {
		t := y.templateAt(script.Str, script.Pos, nil)
		y.checkPath(&t, script.Pos)
	}
	own := templateKeys(s.CommandOverride.V)
	if pt := s.PromptTransport; pt != nil {
		own = append(own, templateKeys(pt.ArgvTemplate.V)...)
	}
	for _, p := range st.Providers {
		y.overrideKeys[p] = append(y.overrideKeys[p], own...)
	}
	y.checkParamKeys("step '"+s.Name.V+"'", s.ProviderParams.V, st.Providers, own)
	// command_override and argv_template are provider templates: their
	// template keys are accepted besides the workflow's variables.
	keys := append(lang.TemplateKeys[:len(lang.TemplateKeys):len(lang.TemplateKeys)], params...)
	for _, p := range y.providers {
		if contains(st.Providers, p.Key) {
			keys = append(keys, mapKeys(p.Defaults.V)...)
		}
	}
	tsc := &scope{loops: sc.loops, agent: sc.agent, allow: sc.allow, keys: keys}
	st.CommandOverride = y.templates(s.CommandOverride, tsc)
	if pt := s.PromptTransport; pt != nil {
		st.Transport = &isa.Transport{Mode: pt.Mode.V, ArgvTemplate: y.templates(pt.ArgvTemplate, tsc)}
	}
}

// waitFor converts a wait_for, filling in the defaults.
func (y *yamlLowerer) waitFor(w *manifest.WaitFor, sc *scope) *isa.WaitFor {
	if w == nil {
		return nil
	}
	out := &isa.WaitFor{Glob: y.template(w.Glob, sc), TimeoutSec: 300, PollMs: 500, MinCount: 1, Consume: w.Consume.V}
	y.checkPath(&out.Glob, w.Glob.Pos)
	if w.TimeoutSec.Set {
		out.TimeoutSec = y.limited(w.TimeoutSec, "wait_for.timeout_sec", "WaitFor", "timeout_sec")
	}
	if w.PollMs.Set {
		out.PollMs = y.limitedInt(w.PollMs, "wait_for.poll_ms", "WaitFor", "poll_ms")
	}
	if w.MinCount.Set {
		out.MinCount = y.limitedInt(w.MinCount, "wait_for.min_count", "WaitFor", "min_count")
	}
	return out
}

// dependsOn converts a depends_on.
func (y *yamlLowerer) dependsOn(d *manifest.DependsOn, sc *scope) *isa.DependsOn {
	if d == nil {
		return nil
	}
	out := &isa.DependsOn{Required: y.templates(d.Required, sc), Optional: y.templates(d.Optional, sc)}
	for i := range out.Required {
		y.checkPath(&out.Required[i], d.Required.V[i].Pos)
	}
	for i := range out.Optional {
		y.checkPath(&out.Optional[i], d.Optional.V[i].Pos)
	}
	if in := d.Inject; in != nil && (in.Enabled.V || in.Mode.Set) {
		out.Inject = "list"
		if in.Mode.Set {
			out.Inject = in.Mode.V
		}
		if out.Inject == "none" {
			out.Inject = ""
		}
		out.Instruction, out.Position = in.Instruction.V, in.Position.V
	}
	return out
}

// loopItems converts for_each.items: a literal list, or a string that is
// one reference to a list.
func (y *yamlLowerer) loopItems(fe *manifest.ForEach, sc *scope) isa.TValue {
	v := fe.Items.V
	if v == nil {
		return isa.TValue{Kind: isa.TList}
	}
	if v.Kind == manifest.KString {
		mt, ok := y.parse(v.Str, v.Pos)
		if !ok {
			for _, r := range mt.Refs() {
				y.checkRef(r, sc)
			}
			return isa.TValue{Kind: isa.TString, Str: lang.Lit(v.Str)}
		}
		if r := mt.Whole(); r == nil {
			y.errorf(v.Pos, source.ESchema, "for_each.items must be a list or one ${...} reference, got '%s'", v.Str)
		} else if what := neverList(r); what != "" {
			y.errorf(v.Pos, source.ESchema, "for_each.items '%s' is never a list %s", v.Str, what)
		}
		for _, r := range mt.Refs() {
			y.checkRef(r, sc)
		}
		return isa.TValue{Kind: isa.TString, Str: mt}
	}
	if v.Kind != manifest.KList {
		y.errorf(v.Pos, source.ESchema, "for_each.items must be a list or one ${...} reference, found %s", v.Kind)
	}
	return y.tvalue(v, sc)
}

// neverList says why the value of r can never be a list (a step's output,
// a run or loop field) and what to use instead, or "" when it may be one.
func neverList(r *lang.Ref) string {
	if r.Path[len(r.Path)-1].IsIndex {
		return ""
	}
	switch r.Root() {
	case rootSteps:
		if len(r.Path) != 3 {
			return ""
		}
		step, field := r.Path[1].Key, r.Path[2].Key
		if field == "lines" || field == "json" || field == "iterations" || !contains(lang.StepFields[:], field) {
			return ""
		}
		return fmt.Sprintf("(%s is a single value): use ${steps.%s.lines}, or output_capture: json and ${steps.%s.json}", field, step, step)
	case rootRun, rootLoop:
		return "(it is a single value)"
	}
	return ""
}

// loopVarName is the form of a for_each.as name: one ${...} root.
var loopVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkLoopAs reports a loop variable name that ${...} cannot reach, or
// that would hide one of the variable namespaces inside the body.
func (y *yamlLowerer) checkLoopAs(as manifest.String) {
	switch {
	case !loopVarName.MatchString(as.V):
		y.errorf(as.Pos, source.ESchema, "for_each.as must be a name like file or item_1 (letters, digits, _), found '%s'", as.V)
	case slices.Contains([]string{rootSteps, rootContext, rootEnv, rootRun, rootAgent, rootLoop}, as.V):
		y.errorf(as.Pos, source.ESchema, "for_each.as '%s' would hide the ${%s...} variables inside the loop: choose another name", as.V, as.V)
	}
}

// limitedInt returns n as an integer, reporting a value that the limit of
// its key (object.key in manifest's types) does not allow, with the rule;
// what names the key in the message.
func (l *lowerer) limitedInt(n manifest.Number, what, object, key string) int {
	lim := manifest.LimitOf(object, key)
	if l.checkLimit(n, what, lim) {
		return int(lim.Min)
	}
	return int(n.V)
}

// limited returns n, reporting a value that the limit of its key does not
// allow (see limitedInt).
func (l *lowerer) limited(n manifest.Number, what, object, key string) float64 {
	l.checkLimit(n, what, manifest.LimitOf(object, key))
	return n.V
}

// checkLimit reports n when lim does not allow it, and says so.
func (l *lowerer) checkLimit(n manifest.Number, what string, lim manifest.Limit) bool {
	rule := lim.Broken(n.V)
	if rule != "" {
		l.errorf(n.Pos, source.ESchema, "%s must be %s, got %s", what, rule, num(n.V))
	}
	return rule != ""
}

// num prints a number as the document would.
func num(f float64) string { return fmt.Sprintf("%g", f) }

// cond converts a condition; nil when its shape is wrong (the schema
// reports that).
func (y *yamlLowerer) cond(c *manifest.Cond, sc *scope) *isa.Cond {
	n := 0
	for _, set := range []bool{c.StepOK.Set, c.FileExists.Set, c.Equals != nil, c.ExitCode != nil, c.EnvSet.Set,
		c.Contains != nil, c.Regex != nil, c.Number != nil, c.All != nil, c.Any != nil, c.Not != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil
	}
	out := &isa.Cond{Pos: c.Pos}
	switch {
	case c.StepOK.Set:
		out.Op, out.Name = isa.CondStepOK, c.StepOK.V
		y.checkStep(c.StepOK, "step_ok")
	case c.FileExists.Set:
		out.Op, out.X, out.XPos = isa.CondFileExists, y.templatePtr(c.FileExists, sc), c.FileExists.Pos
		y.checkPath(out.X, c.FileExists.Pos)
	case c.Equals != nil:
		out.Op, out.X, out.Y = isa.CondEquals, y.scalar(c.Equals.Left, sc), y.scalar(c.Equals.Right, sc)
	case c.ExitCode != nil:
		e := c.ExitCode
		out.Op, out.Name, out.Cmp, out.Num = isa.CondExitCode, e.Step.V, y.checkOp(e.Op), e.Value.V
		y.checkStep(e.Step, "exit_code")
	case c.EnvSet.Set:
		out.Op, out.Name = isa.CondEnvSet, c.EnvSet.V
	case c.Contains != nil:
		out.Op, out.X, out.Y = isa.CondContains, y.scalar(c.Contains.Haystack, sc), y.scalar(c.Contains.Needle, sc)
	case c.Regex != nil:
		r := c.Regex
		out.Op, out.X, out.Y, out.Flags = isa.CondRegex, y.scalar(r.Text, sc), y.templatePtr(r.Pattern, sc), r.Flags.V
		if out.Y != nil && out.Y.IsLiteral() {
			pat := out.Y.Literal()
			if r.Flags.V != "" {
				pat = "(?" + r.Flags.V + ")" + pat
			}
			if _, err := regexp.Compile(pat); err != nil {
				y.errorf(r.Pattern.Pos, source.EParse, "invalid regex: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			}
		}
	case c.Number != nil:
		nc := c.Number
		out.Op, out.X, out.Cmp, out.Y = isa.CondNumber, y.scalar(nc.Left, sc), y.checkOp(nc.Op), y.scalar(nc.Right, sc)
	case c.All != nil, c.Any != nil:
		out.Op = isa.CondAll
		subs := c.All
		if c.Any != nil {
			out.Op, subs = isa.CondAny, c.Any
		}
		out.Sub = []isa.Cond{}
		for _, s := range subs {
			if s == nil {
				continue
			}
			if sub := y.cond(s, sc); sub != nil {
				out.Sub = append(out.Sub, *sub)
			}
		}
	case c.Not != nil:
		sub := y.cond(c.Not, sc)
		if sub == nil {
			return nil
		}
		out.Op, out.Sub = isa.CondNot, []isa.Cond{*sub}
	}
	return out
}

// checkStep checks the step a condition names.
func (y *yamlLowerer) checkStep(s manifest.String, what string) {
	if s.Set && !y.hasStep(s.V) {
		y.errorf(s.Pos, source.EVarMissing, "%s names unknown step '%s'%s", what, s.V, source.DidYouMean(s.V, y.steps))
	}
}

// checkOp returns a comparison operator; the schema checks its value.
func (y *yamlLowerer) checkOp(s manifest.String) string {
	return s.V
}

// transitions resolves the outcome handlers of step i of list to one
// transition per outcome (CONTRACT 3.3): SUCCESS, FAILURE, TIMEOUT, SKIPPED,
// VALIDATION_FAIL, MAX_VISITS, then FAIL_DEFAULT. Error messages are
// templates checked in the step's scope sc.
func (y *yamlLowerer) transitions(s *manifest.Step, list *stepList, i int, sc *scope) []*ir.Transition {
	on := s.On
	if on == nil {
		on = &manifest.On{}
	}
	name, pos := s.Name.V, stepPos(s)
	h := func(hd *manifest.Handler, outcome string) *ir.Transition {
		return y.handler(hd, outcome, name, list, sc)
	}
	success, failure, timeout := h(on.Success, "success"), h(on.Failure, "failure"), h(on.Timeout, "timeout")
	skipped, validation, maxVisits, always := h(on.Skipped, "skipped"), h(on.ValidationFail, "validation_fail"), h(on.MaxVisits, "max_visits"), h(on.Always, "always")

	next := &ir.Transition{Action: ir.End, Pos: pos}
	switch {
	case i+1 < len(list.names):
		next = &ir.Transition{Action: ir.Jump, Target: list.names[i+1], Pos: pos}
	case list.inLoop:
		next = &ir.Transition{Action: ir.LoopNext, Pos: pos}
	case list.inBranch:
		next = &ir.Transition{Action: ir.BranchEnd, Pos: pos}
	}
	failed := failTransition(fmt.Sprintf("step '%s' failed", name), pos)
	switch {
	case list.inLoop:
		failed = &ir.Transition{Action: ir.LoopFail, Pos: pos}
	case list.inBranch:
		failed = &ir.Transition{Action: ir.BranchFail, Pos: pos}
	}

	onSuccess := first(success, always)
	if onSuccess == nil {
		if y.strict {
			y.errorf(pos, source.EStrictFlow, "step '%s' has no on.success handler (strict_flow requires on.success and on.failure, or on.always)", name)
		}
		onSuccess = next
	}
	onFailure := first(failure, always)
	if onFailure == nil {
		if y.strict {
			y.errorf(pos, source.EStrictFlow, "step '%s' has no on.failure handler (strict_flow requires on.success and on.failure, or on.always)", name)
		}
		onFailure = failed
	}
	out := []*ir.Transition{
		with(lang.SigSuccess, onSuccess),
		with(lang.SigFailure, onFailure),
		with(lang.SigTimeout, first(timeout, onFailure)),
		with(lang.SigSkipped, first(skipped, next)),
		with(lang.SigValidationFail, first(validation, onFailure)),
		with(lang.SigMaxVisits, first(maxVisits, onFailure)),
		with(lang.SigFailDefault, first(always, onFailure)),
	}
	// Custom signals, in document order; the VM sends one with no entry
	// of its own to success or failure by the step's exit code.
	for _, sh := range dropNil(byOrder(on.Signals, func(s *manifest.SignalHandler) int { return s.Order })) {
		if slices.Contains(yamlOutcomeSignals[:], sh.Key) {
			y.errorf(sh.Pos, source.ESchema, "on.signals cannot route the reserved signal '%s': use its own on: key", sh.Key)
			continue
		}
		if t := h(sh.Handler, "signals."+sh.Key); t != nil {
			out = append(out, with(sh.Key, t))
		}
	}
	return out
}

// yamlOutcomeSignals are the signals of YAML's own outcomes (and the
// default): on.signals routes only the others.
var yamlOutcomeSignals = [...]string{lang.SigSuccess, lang.SigFailure, lang.SigTimeout, lang.SigSkipped, lang.SigValidationFail, lang.SigMaxVisits, lang.SigFailDefault}

// first returns the first non-nil transition.
func first(ts ...*ir.Transition) *ir.Transition {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}

// with returns a copy of t on signal sig.
func with(sig string, t *ir.Transition) *ir.Transition {
	c := *t
	c.Signal = sig
	return &c
}

// failTransition is a Fail transition with a message the compiler made up:
// a literal, never parsed for references.
func failTransition(msg string, pos source.Pos) *ir.Transition {
	return &ir.Transition{Action: ir.Fail, Msg: msg, MsgTmpl: litTemplate(msg), Pos: pos}
}

// litTemplate is the template of a literal message.
func litTemplate(msg string) *lang.Template {
	t := lang.Lit(msg)
	return &t
}

// handler converts the handler of one outcome of step name; nil when
// absent. An error message is a template checked in the step's scope sc.
func (y *yamlLowerer) handler(h *manifest.Handler, outcome, name string, list *stepList, sc *scope) *ir.Transition {
	if h == nil {
		return nil
	}
	t := &ir.Transition{Pos: h.Pos}
	switch {
	case h.Goto.Set:
		if !t.Pos.IsValid() {
			t.Pos = h.Goto.Pos
		}
		y.gotoTarget(t, h.Goto, name, list)
	case h.End.Set && h.End.V:
		t.Action = ir.End
		if list.thread {
			y.badEnd(h.End.Pos, "end: true")
		}
	case h.Error.Set:
		if h.Error.V == "" {
			y.errorf(h.Error.Pos, source.ESchema, "the error message in handler '%s' of step '%s' is empty: say what failed (it is printed as ERROR: MESSAGE)", outcome, name)
		}
		tm := y.template(h.Error, sc)
		t.Action, t.Msg, t.MsgTmpl = ir.Fail, h.Error.V, &tm
	case h.Halt.Set && h.Halt.V:
		t.Action = ir.Halt
		if list.thread {
			y.errorf(h.Halt.Pos, source.EBadTarget, "halt: true inside a parallel iteration or branch would stop the whole run from a thread: halt after the join")
		}
	default:
		// end: false or halt: false alone: the handler would be absent.
		for _, b := range []struct {
			key string
			v   manifest.Bool
		}{{"end", h.End}, {"halt", h.Halt}} {
			if b.v.Set {
				y.errorf(b.v.Pos, source.ESchema, "'%s: false' in handler '%s' of step '%s' does nothing: use %s: true, goto: STEP or error: MESSAGE, or remove the handler", b.key, outcome, name, b.key)
			}
		}
		return nil
	}
	return t
}

// badEnd reports an end of the whole run inside a thread (CONTRACT 12.3).
func (y *yamlLowerer) badEnd(pos source.Pos, what string) {
	y.errorf(pos, source.EBadTarget, "%s inside a parallel iteration or branch would end the whole run from a thread: use _branch_end (a branch), _loop_continue or _loop_break (an iteration)", what)
}

// gotoTarget resolves {goto: X} into t.
func (y *yamlLowerer) gotoTarget(t *ir.Transition, g manifest.String, name string, list *stepList) {
	x := g.V
	msg := fmt.Sprintf("step '%s' failed", name) // on error
	t.Action, t.Msg, t.MsgTmpl = ir.Fail, msg, litTemplate(msg)
	switch x {
	case lang.TargetEnd:
		t.Action, t.Msg, t.MsgTmpl = ir.End, "", nil
		if list.thread {
			y.badEnd(g.Pos, "goto: _end")
		}
		return
	case lang.TargetBranchEnd:
		if !list.inBranch {
			y.errorf(g.Pos, source.EUnknownTarget, "goto target '%s' is only allowed in the step list of a parallel branch", x)
			return
		}
		t.Action, t.Msg, t.MsgTmpl = ir.BranchEnd, "", nil
		return
	case lang.TargetError:
		return
	case lang.TargetStart:
		if list.inLoop || list.inBranch {
			y.errorf(g.Pos, source.EUnknownTarget, "goto target '%s' is only allowed at the top level, not in the loop body of '%s'", x, name)
			return
		}
		if len(y.top) > 0 {
			t.Action, t.Target, t.Msg, t.MsgTmpl = ir.Jump, y.top[0], "", nil
		}
		return
	case lang.TargetLoopBreak, lang.TargetLoopContinue:
		if !list.inLoop {
			y.errorf(g.Pos, source.EUnknownTarget, "goto target '%s' is only allowed inside a for_each body", x)
			return
		}
		t.Action, t.Msg, t.MsgTmpl = ir.LoopBreak, "", nil
		if x == lang.TargetLoopContinue {
			t.Action = ir.LoopNext
		}
		return
	}
	if list.set[x] {
		t.Action, t.Target, t.Msg, t.MsgTmpl = ir.Jump, x, "", nil
		return
	}
	if y.hasStep(x) {
		y.errorf(g.Pos, source.EUnknownTarget, "goto target '%s' is not in the same step list as '%s'", x, name)
		return
	}
	known := append([]string{lang.TargetEnd, lang.TargetError}, list.names...)
	switch {
	case list.inLoop:
		known = append(known, lang.TargetLoopBreak, lang.TargetLoopContinue)
	case list.inBranch:
		known = append(known, lang.TargetBranchEnd)
	default:
		known = append(known, lang.TargetStart)
	}
	y.errorf(g.Pos, source.EUnknownTarget, "goto target '%s' is not a step%s", x, source.DidYouMean(x, known))
}
