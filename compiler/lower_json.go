package compiler

import (
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"smith/compiler/ir"
	"smith/isa"
	"smith/lang"
	"smith/manifest"
	"smith/source"
)

// Reference prefixes of node and block ids; a reference resolves with or
// without them.
const (
	nodePrefix  = "Node:"
	blockPrefix = "Block:"
)

// LowerManifest lowers a workflows.json Node/Block manifest to the IR
// (CONTRACT section 7): one Node per node and one Block per block, in
// document order, with every transition's action parsed and its targets
// resolved to the IDs as the manifest spells them. It checks ids, workers,
// providers, schemas, signals and actions, and reports every problem it
// finds.
func LowerManifest(mf *manifest.Manifest, opt Options) (*ir.Program, source.Diagnostics) {
	if mf == nil {
		return nil, nil
	}
	if mf.Config != nil && mf.Config.Isolation.V == lang.IsolationWorktree {
		opt.Layout = nil // its WORKSPACE is its worktree, made when it starts
	}
	m := &jsonLowerer{lowerer: newLowerer(mf.File, opt), mf: mf, nodes: map[string]*manifest.Node{}}
	l := m.lowerer
	l.providers = sortedProviders(mf.Providers)
	l.contextKeys = nil
	data := &isa.Program{Name: manifestName(mf), Format: ir.Manifest.String(), Source: mf.File}
	l.runWide(data, mf.Secrets, mf.EnvAllow, mf.Env)
	l.checkDefaults(mf.Defaults)
	data.Schemas = l.lowerSchemas(mf.Schemas)
	if c := mf.Config; c != nil {
		data.Config = lang.Config{
			TestCommand:     rawStrings(c.TestCommand),
			LintCommand:     rawStrings(c.LintCommand),
			BuildCommand:    rawStrings(c.BuildCommand),
			Isolation:       c.Isolation.V,
			CommitArtifacts: c.CommitArtifacts.V,
		}
	}
	l.config = data.Config
	data.Agents = m.lowerAgents(mf.Agents)
	m.index()
	m.lowerWorkers()

	p := &ir.Program{Name: data.Name, Format: ir.Manifest, File: mf.File, Data: data}
	p.Nodes = make([]*ir.Node, 0, len(m.nodeList))
	for i, n := range m.nodeList {
		p.Nodes = append(p.Nodes, m.lowerNode(n))
		if opt.consume && i == len(m.nodeList)/2 {
			// The lowered half's transitions are garbage (lowerBlock
			// dropped them): the other half reuses their memory.
			runtime.GC()
		}
	}
	p.Entry, p.EntryPos = m.entry()
	data.Providers = l.lowerProviders()
	l.diags.Sort()
	return p, l.diags
}

// A jsonLowerer lowers one manifest.
type jsonLowerer struct {
	*lowerer
	mf *manifest.Manifest
	// nodeList holds the nodes in document order; nodes maps a node id
	// without its prefix to its first node.
	nodeList []*manifest.Node
	nodes    map[string]*manifest.Node
	nodeIDs  []string // ids without prefix, document order
	// blocks maps a block id without its prefix to its first block.
	blocks   map[string]blockRef
	blockIDs []string // ids without prefix, document order
	// workers are the lowered workers entries, by key.
	workers  map[string]*workerSpec
	workerKs []string // workers keys, document order
	// scratch is the spec of the block being lowered when the IR keeps
	// none (Options.ChecksOnly).
	scratch struct {
		spec isa.Block
		step isa.Step
	}
}

// A blockRef is a block and the node that holds it.
type blockRef struct {
	node  *manifest.Node
	block *manifest.Block
}

// A workerSpec is a lowered workers entry, shared by the blocks that use it.
type workerSpec struct {
	def       *manifest.WorkerDef
	agent     *manifest.Agent
	providers []string
	params    []isa.Field
	command   []lang.Template
}

// index lists the nodes and blocks in document order and reports
// duplicate ids (compared without their prefixes).
func (m *jsonLowerer) index() {
	m.nodeList = dropNil(byOrder(m.mf.Nodes, func(n *manifest.Node) int { return n.Order }))
	// Sized once: grown block by block, the tables allocate about twice
	// their size (docs/performance.md, fifth pass, continued).
	nb := 0
	for _, n := range m.nodeList {
		nb += len(n.Blocks)
	}
	m.blocks = make(map[string]blockRef, nb)
	m.blockIDs = make([]string, 0, nb)
	m.steps = slices.Grow(m.steps, nb)
	if len(m.stepSet) == 0 {
		m.stepSet = make(map[string]bool, nb)
	}
	for _, n := range m.nodeList {
		id := strings.TrimPrefix(n.Key, nodePrefix)
		if prev, dup := m.nodes[id]; dup {
			m.errorf(n.Pos, source.EDupStep, "node id '%s' is already used at %s", n.Key, prev.Pos)
		} else {
			m.nodes[id] = n
			m.nodeIDs = append(m.nodeIDs, id)
		}
		for _, b := range m.nodeBlocks(n) {
			id := strings.TrimPrefix(b.Key, blockPrefix)
			if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\\\x00") {
				// The id names log files and the artifact folder.
				m.errorf(b.Pos, source.ESchema, "block id '%s' must be a non-empty name without '/' or '\\' (it names files)", b.Key)
				continue
			}
			if prev, dup := m.blocks[id]; dup {
				m.errorf(b.Pos, source.EDupStep, "block id '%s' is already used at %s", b.Key, prev.block.Pos)
				continue
			}
			m.blocks[id] = blockRef{n, b}
			m.blockIDs = append(m.blockIDs, id)
			m.addStep(b.Key)
		}
	}
}

// nodeBlocks returns a node's blocks in document order.
func (m *jsonLowerer) nodeBlocks(n *manifest.Node) []*manifest.Block {
	return dropNil(byOrder(n.Blocks, func(b *manifest.Block) int { return b.Order }))
}

// block resolves a block reference (with or without its prefix).
func (m *jsonLowerer) block(ref string) (blockRef, bool) {
	b, ok := m.blocks[strings.TrimPrefix(ref, blockPrefix)]
	return b, ok
}

// node resolves a node reference (with or without its prefix).
func (m *jsonLowerer) node(ref string) (*manifest.Node, bool) {
	n, ok := m.nodes[strings.TrimPrefix(ref, nodePrefix)]
	return n, ok
}

// blockHint is the did-you-mean of an unknown block reference.
func (m *jsonLowerer) blockHint(ref string) string {
	if n, ok := m.node(ref); ok {
		return " ('" + n.Key + "' is a node)"
	}
	s := source.Suggest(strings.TrimPrefix(ref, blockPrefix), m.blockIDs)
	if s == "" {
		return ""
	}
	return " (did you mean '" + m.blocks[s].block.Key + "'?)"
}

// nodeHint is the did-you-mean of an unknown node reference.
func (m *jsonLowerer) nodeHint(ref string) string {
	if b, ok := m.block(ref); ok {
		return " ('" + b.block.Key + "' is a block)"
	}
	s := source.Suggest(strings.TrimPrefix(ref, nodePrefix), m.nodeIDs)
	if s == "" {
		return ""
	}
	return " (did you mean '" + m.nodes[s].Key + "'?)"
}

// lowerWorkers checks and converts every workers entry once.
func (m *jsonLowerer) lowerWorkers() {
	m.workers = map[string]*workerSpec{}
	for _, w := range dropNil(byOrder(m.mf.Workers, func(w *manifest.WorkerDef) int { return w.Order })) {
		ws := &workerSpec{def: w, agent: m.agentRef(w.Agent)}
		if strings.HasPrefix(w.Key, lang.InternalPrefix) {
			m.errorf(w.Pos, source.ESchema, "workers key '%s' starts with %s, which names the internal workers; give it another name (Worker:NAME, Command:NAME)", w.Key, lang.InternalPrefix)
		}
		m.checkWorkerKind(w)
		if w.Timeout.Set {
			// Checked here too: a worker no block runs is checked once.
			m.limited(w.Timeout, "timeout", "WorkerDef", "timeout")
		}
		m.checkOutputType(w)
		sc := &scope{}
		if w.Provider.Set || ws.agent != nil && w.Command.V == nil {
			ws.providers = m.checkProviders(w.Provider, mapKeys(w.ProviderParams.V))
			m.checkStepContinues(ws.agent, w.Provider)
			if !w.Provider.Set {
				ws.providers = rawStrings(manifest.StringList(ws.agent.Provider))
			}
			m.checkParamKeys("worker '"+w.Key+"'", w.ProviderParams.V, ws.providers, nil)
			ws.params = m.fields(w.ProviderParams.V, sc)
			if script := w.ProviderParams.V.Get(lang.KeyScript); script != nil && script.Kind == manifest.KString && contains(ws.providers, lang.PresetMock) {
				t := m.templateAt(script.Str, script.Pos, nil)
				m.checkPath(&t, script.Pos)
			}
		} else {
			ws.command = m.templates(w.Command, sc)
		}
		m.workers[w.Key] = ws
		m.workerKs = append(m.workerKs, w.Key)
	}
}

// checkOutputType reports an output_type that cannot name a segment type
// (lang.IsSegmentType: "code output", "lint-output", ""), with the name it
// was likely meant to be: a type of another worker or a default one near
// its upper-cased form, else that form (E_SCHEMA).
func (m *jsonLowerer) checkOutputType(w *manifest.WorkerDef) {
	t := w.OutputType
	if !t.Set || lang.IsSegmentType(t.V) {
		return
	}
	if t.V == "" {
		m.errorf(t.Pos, source.ESchema, "worker '%s': output_type is empty; leave it out for the default (%s for an AI worker, %s for a command worker)",
			w.Key, lang.DefaultOutputType, lang.DefaultCommandOutputType)
		return
	}
	hint := ""
	if norm := m.segmentTypeNear(t.V); norm != "" {
		hint = " (did you mean '" + norm + "'?)"
	}
	m.errorf(t.Pos, source.ESchema, "worker '%s': output_type '%s' is not a segment type name: write upper-case letters, digits and _, starting with a letter (as AI_RESPONSE, CODE_OUTPUT)%s",
		w.Key, t.V, hint)
}

// segmentTypeNear is the segment type a written name that is none (v)
// most likely meant: v upper-cased with _ between its words, or the
// manifest's type nearest to that (the defaults and every worker's
// output_type); "" when none comes near.
func (m *jsonLowerer) segmentTypeNear(v string) string {
	norm := lang.SegmentTypeOf(v)
	if norm == "" {
		return ""
	}
	known := []string{lang.DefaultOutputType, lang.DefaultCommandOutputType}
	for _, o := range m.mf.Workers {
		if o != nil && lang.IsSegmentType(o.OutputType.V) {
			known = append(known, o.OutputType.V)
		}
	}
	if near := source.Suggest(norm, known); near != "" && !contains(known, norm) {
		return near
	}
	return norm
}

// checkWorkerKind reports a workers entry that is not exactly one kind: an
// AI worker (provider or agent) or a command worker (a non-empty command),
// and the AI workers' keys on a command worker, which would be ignored.
func (m *jsonLowerer) checkWorkerKind(w *manifest.WorkerDef) {
	ai := w.Provider.Set || w.Agent.Set
	switch {
	case !ai && !w.Command.Set:
		m.errorf(w.Pos, source.ESchema, "worker '%s' has neither provider, agent nor command: an AI worker needs provider or agent, a command worker command", w.Key)
		return
	case ai && w.Command.Set:
		other := "provider"
		if !w.Provider.Set {
			other = "agent"
		}
		m.errorf(w.Command.Pos, source.ESchema, "worker '%s' has both %s and command: an AI worker has provider or agent, a command worker command; remove one", w.Key, other)
		return
	case ai:
		return
	case len(w.Command.V) == 0:
		m.errorf(w.Command.Pos, source.ESchema, "command of worker '%s' is empty: give the program and its arguments", w.Key)
	}
	aiOnly := []struct {
		key string
		set bool
		pos source.Pos
	}{
		{"provider_params", w.ProviderParams.V != nil, posOf(w.ProviderParams.V)},
		{"model", w.Model.Set, w.Model.Pos},
		{"permissions", w.Permissions.Set, w.Permissions.Pos},
		{"instructions", w.Instructions.Set, w.Instructions.Pos},
	}
	for _, k := range aiOnly {
		if k.set {
			m.errorf(k.pos, source.ESchema, "'%s' applies to AI workers only; command worker '%s' would ignore it", k.key, w.Key)
		}
	}
}

// posOf is the position of v, or none for nil.
func posOf(v *manifest.Value) source.Pos {
	if v == nil {
		return source.Pos{}
	}
	return v.Pos
}

// manifestName is the name of a manifest's runs: its name key, else the
// name of its file, but for the conventional workflows.json the name of the
// folder that holds it (runs of several projects' workflows.json are then
// told apart in smithvm list).
func manifestName(mf *manifest.Manifest) string {
	if mf.Name.V != "" {
		return mf.Name.V
	}
	stem := fileStem(mf.File)
	if stem == "workflows" {
		if d := filepath.Base(filepath.Dir(mf.File)); d != "." && d != "/" && d != "" {
			return d
		}
	}
	return stem
}

// entry resolves the manifest's entry (a node, or a block) to the ID of the
// block where a run starts.
func (m *jsonLowerer) entry() (string, source.Pos) {
	e := m.mf.Entry
	if s := m.opt.Start; s != "" {
		pos := e.Pos
		if !e.Set {
			pos = m.mf.Pos
		}
		if n, ok := m.node(s); ok {
			return m.nodeEntry(n, false), pos
		}
		m.errorf(pos, source.EUnknownTarget, "--start '%s' is not a node of the manifest%s", s, m.nodeHint(s))
		return "", pos
	}
	if !e.Set {
		if len(m.nodeList) > 0 {
			return m.nodeEntry(m.nodeList[0], false), m.nodeList[0].Pos
		}
		return "", source.Pos{}
	}
	if n, ok := m.node(e.V); ok {
		return m.nodeEntry(n, false), e.Pos
	}
	if b, ok := m.block(e.V); ok {
		return b.block.Key, e.Pos
	}
	hint := m.nodeHint(e.V)
	if hint == "" {
		hint = m.blockHint(e.V)
	}
	m.errorf(e.Pos, source.EUnknownTarget, "entry '%s' is neither a node nor a block of the manifest%s", e.V, hint)
	return "", e.Pos
}

// nodeEntry resolves a node's entry_block to the block's ID as spelled,
// reporting a reference to no block of the node when report is true. The
// node's first block stands in for an unresolved entry.
func (m *jsonLowerer) nodeEntry(n *manifest.Node, report bool) string {
	blocks := m.nodeBlocks(n)
	fallback := ""
	if len(blocks) > 0 {
		fallback = blocks[0].Key
	}
	eb := n.EntryBlock
	if !eb.Set {
		return fallback
	}
	b, ok := m.block(eb.V)
	switch {
	case ok && b.node == n:
		return b.block.Key
	case ok:
		if report {
			m.errorf(eb.Pos, source.EUnknownTarget, "entry_block '%s' of node '%s' is a block of node '%s'", eb.V, n.Key, b.node.Key)
		}
	case report:
		m.errorf(eb.Pos, source.EUnknownTarget, "entry_block '%s' is not a block%s", eb.V, m.blockHint(eb.V))
	}
	return fallback
}

// lowerNode lowers one node and its blocks.
func (m *jsonLowerer) lowerNode(n *manifest.Node) *ir.Node {
	out := &ir.Node{
		ID:           n.Key,
		Pos:          n.Pos,
		Entry:        m.nodeEntry(n, true),
		Inherit:      n.ContextInheritance.V,
		StaticMemory: canonicalJSON(n.StaticMemory.V),
	}
	for _, b := range m.nodeBlocks(n) {
		out.Blocks = append(out.Blocks, m.lowerBlock(b))
	}
	return out
}

// lowerBlock lowers one block.
func (m *jsonLowerer) lowerBlock(blk *manifest.Block) *ir.Block {
	b := &ir.Block{ID: blk.Key, Pos: blk.Pos, Worker: blk.Worker.V}
	var spec *isa.Block
	var st *isa.Step
	if m.opt.ChecksOnly {
		// The checks need the spec only while the block is lowered: one
		// scratch spec serves every block, and the IR keeps none.
		spec, st = &m.scratch.spec, &m.scratch.step
		*spec, *st = isa.Block{}, isa.Step{}
	} else {
		spec, st = new(isa.Block), new(isa.Step)
		b.Spec = spec
	}
	spec.ID, spec.Pos, spec.Step = blk.Key, blk.Pos, st
	if mv := manifest.Opt(blk.MaxVisits); mv.Set {
		b.MaxVisits = m.limitedInt(mv, "max_visits", "Block", "max_visits")
		spec.MaxVisits = b.MaxVisits
	}
	st.Worker, st.Validation = blk.Worker.V, m.checkSchema(manifest.Opt(blk.ValidationSchema))
	merge := m.payloadMerge(manifest.Opt(blk.PayloadMergeStrategy))
	// How the worker runs: the block's timeout, then the worker's, then the
	// defaults; model and permissions from the worker, then the defaults.
	var buf [4]execLayer // at most the block's, the worker's, the agent's and the defaults
	layers := append(buf[:0], execLayer{timeout: manifest.Opt(blk.Timeout), object: "Block"})
	name := blk.Worker.V
	if iw := lang.LookupInternal(name); iw != nil {
		b.Kind = isa.KindInternal
		b.Signals = shared(iw.Signals)
		m.checkToolConfig(name, blk.Worker.Pos)
	} else if ws, ok := m.workers[name]; ok {
		w := ws.def
		layers = append(layers, execLayer{model: modelOf(w.Model, w.ProviderParams), permissions: w.Permissions, timeout: w.Timeout, object: "WorkerDef"})
		if a := ws.agent; a != nil {
			spec.Agent = a.Key
			layers = append(layers, execLayer{model: a.Model, permissions: a.Permissions})
		}
		b.Signals = shared(manifestWorkerSignals[:])
		if ws.providers != nil {
			b.Kind, b.AI = isa.KindProvider, true
			st.Providers = ws.providers
			st.AI = &isa.AIWorker{Key: w.Key, Instructions: w.Instructions.V, OutputType: w.OutputType.V, ProviderParams: ws.params}
			st.ProviderParams = ws.params
			st.OutputType = w.OutputType.V
			if st.OutputType == "" {
				st.OutputType = lang.DefaultOutputType
			}
			st.PayloadMerge = merge
		} else {
			b.Kind = isa.KindCommand
			st.Command = ws.command
			st.PayloadIO, st.OutputType = true, w.OutputType.V
			if st.OutputType == "" {
				st.OutputType = lang.DefaultCommandOutputType
			}
			b.AnySignal = true // its last stdout line may name any signal
		}
	} else {
		b.Kind = isa.KindInternal
		b.Signals = shared(manifestWorkerSignals[:2])
		if blk.Worker.Set {
			known := append(lang.InternalNames(), m.workerKs...)
			hint := source.DidYouMeanOrList(name, known, "the workers are")
			for _, k := range m.workerKs {
				if strings.HasSuffix(k, ":"+name) {
					hint = " (did you mean '" + k + "'? a worker is named exactly as its key)"
					break
				}
			}
			m.errorf(blk.Worker.Pos, source.EUnknownWorker, "worker '%s' is neither an internal worker nor a key of workers%s", name, hint)
		}
	}
	var sc scope
	m.applyLayers(st, &sc, append(layers, defaultsLayer(m.mf.Defaults))...)
	if st.Validation != "" && !contains(b.Signals, lang.SigValidationFail) {
		b.Signals = append(b.Signals, lang.SigValidationFail)
	}
	if b.MaxVisits > 0 {
		b.Signals = append(b.Signals, lang.SigMaxVisits)
	}
	if pm := manifest.Opt(blk.PayloadMergeStrategy); pm.Set && !b.AI && (b.Kind == isa.KindCommand || lang.LookupInternal(name) != nil) {
		m.errorf(pm.Pos, source.ESchema, "payload_merge_strategy orders the prompt of an AI worker; block '%s' runs %s, which gets no prompt", blk.Key, name)
	}
	b.Transitions = m.transitions(blk)
	if m.opt.consume {
		blk.Transitions = nil // read here only; see Options.consume
	}
	return b
}

// manifestWorkerSignals are the signals of a workers entry's block; an unknown
// worker's are the first two.
var manifestWorkerSignals = [...]string{lang.SigSuccess, lang.SigFailure, lang.SigTimeout}

// shared returns s with its capacity cut to its length, so that a block's
// append copies it: the blocks share the arrays of their usual signals
// instead of each allocating its own (docs/performance.md, fifth pass,
// third part). Nothing writes into a block's Signals.
func shared(s []string) []string { return s[:len(s):len(s)] }

// payloadMerge checks a payload_merge_strategy and returns it, or the
// default when it is absent.
func (m *jsonLowerer) payloadMerge(sl manifest.StringList) []string {
	if !sl.Set {
		return lang.DefaultPayloadMerge[:len(lang.DefaultPayloadMerge):len(lang.DefaultPayloadMerge)]
	}
	out := make([]string, 0, len(sl.V))
	for _, s := range sl.V {
		out = append(out, s.V)
		layer, arg, _, ok := lang.ParseLayer(s.V)
		switch {
		case !ok:
			var plain []string // the forms a did-you-mean can name
			for _, f := range lang.LayerForms() {
				if !strings.Contains(f, ":") || strings.HasSuffix(f, ":"+lang.LayerLast) {
					plain = append(plain, f)
				}
			}
			m.errorf(s.Pos, source.ESchema, "payload_merge_strategy entry '%s' is not one of %s%s",
				s.V, strings.Join(lang.LayerForms(), ", "), source.DidYouMean(s.V, plain))
		case layer == lang.LayerArtifact:
			t := lang.Lit(arg)
			m.checkPath(&t, s.Pos)
		case layer == lang.LayerPayload && arg != "" && arg != lang.LayerLast && !lang.IsSegmentType(arg):
			// A type no output_type can have: the layer would select nothing.
			hint := ""
			if norm := m.segmentTypeNear(arg); norm != "" {
				hint = " (did you mean '" + lang.LayerPayload + ":" + norm + "'?)"
			}
			m.errorf(s.Pos, source.ESchema, "payload_merge_strategy entry '%s' names no segment type: after %s: write %s or a type name, upper-case letters, digits and _, starting with a letter (as AI_RESPONSE, CODE_OUTPUT)%s",
				s.V, lang.LayerPayload, lang.LayerLast, hint)
		}
	}
	return out
}

// transitions lowers a block's transitions in document order. A row whose
// action is missing or unreadable, and a missing transitions key (the
// schema reports it), lower to a FAIL (on the row's signal, or on
// SIGNAL:FAIL_DEFAULT), so that the graph checks do not also report the
// block as having no transition for its signals.
func (m *jsonLowerer) transitions(blk *manifest.Block) []*ir.Transition {
	if blk.Transitions == nil {
		return []*ir.Transition{unreadable(blk.Pos, lang.SigFailDefault, "missing transitions")}
	}
	var out []*ir.Transition
	var seen []string
	for _, tr := range blk.Transitions {
		if tr == nil {
			continue
		}
		sig := tr.OnSignal.V
		ok := true
		switch {
		case !tr.OnSignal.Set:
			ok = false // the schema reports it
		case !lang.IsSignal(sig):
			m.errorf(tr.OnSignal.Pos, source.EBadAction, "signal '%s' is not of the form SIGNAL:NAME (capital letters, digits and '_')", sig)
			ok = false
		case contains(seen, sig):
			m.errorf(tr.OnSignal.Pos, source.EBadAction, "signal '%s' already has a transition in block '%s'", sig, blk.Key)
			ok = false
		default:
			seen = append(seen, sig)
		}
		if !tr.Action.Set {
			// The schema reports it; the row still covers its signal.
			if ok {
				out = append(out, unreadable(tr.Pos, sig, "missing action"))
			}
			continue
		}
		a, d := manifest.ParseAction(tr.Action.V, tr.Action.Pos)
		if d != nil {
			m.diags.Append(*d)
			if ok {
				out = append(out, unreadable(tr.Pos, sig, "unresolved action '"+tr.Action.V+"'"))
			}
			continue
		}
		t := m.action(a, tr)
		if ok {
			t.Signal = sig
			out = append(out, t)
		}
	}
	return out
}

// unreadable is the FAIL transition on sig that stands for a row or table
// the lowering reported as broken.
func unreadable(pos source.Pos, sig, msg string) *ir.Transition {
	return &ir.Transition{Pos: pos, Signal: sig, Action: ir.Fail, Msg: msg, MsgTmpl: litTemplate(msg)}
}

// action resolves a parsed action of transition tr. An action whose target
// is unknown becomes a FAIL, so the program stays whole.
func (m *jsonLowerer) action(a manifest.Action, tr *manifest.Transition) *ir.Transition {
	t := &ir.Transition{Pos: tr.Pos}
	if !t.Pos.IsValid() {
		t.Pos = a.Pos
	}
	unresolved := func() *ir.Transition {
		msg := "unresolved action '" + tr.Action.V + "'"
		t.Action, t.Target, t.ReturnTo, t.Msg, t.MsgTmpl = ir.Fail, "", "", msg, litTemplate(msg)
		return t
	}
	switch a.Kind {
	case manifest.ActJump:
		b, ok := m.block(a.Target)
		if !ok {
			if _, isNode := m.node(a.Target); isNode {
				m.errorf(a.TargetPos, source.EUnknownTarget, "jump target '%s' is a node, not a block: CALL:%s enters it, or JUMP to one of its blocks", a.Target, a.Target)
				return unresolved()
			}
			m.errorf(a.TargetPos, source.EUnknownTarget, "jump target '%s' is not a block%s", a.Target, m.blockHint(a.Target))
			return unresolved()
		}
		t.Action, t.Target = ir.Jump, b.block.Key
	case manifest.ActCall:
		n, ok := m.node(a.Target)
		if !ok {
			if _, isBlock := m.block(a.Target); isBlock {
				m.errorf(a.TargetPos, source.EUnknownTarget, "call target '%s' is a block, not a node: JUMP:%s goes to it, or CALL its node", a.Target, a.Target)
				return unresolved()
			}
			m.errorf(a.TargetPos, source.EUnknownTarget, "call target '%s' is not a node%s", a.Target, m.nodeHint(a.Target))
			return unresolved()
		}
		t.Action, t.Target = ir.Call, n.Key
	case manifest.ActReturn:
		t.Action = ir.Return
	case manifest.ActHalt:
		t.Action = ir.Halt
	case manifest.ActEnd:
		t.Action = ir.End
	case manifest.ActFail:
		tm := m.templateAt(a.Msg, a.TargetPos, &scope{})
		t.Action, t.Msg, t.MsgTmpl = ir.Fail, a.Msg, &tm
	}
	if rt := manifest.Opt(tr.ReturnTo); rt.Set {
		if a.Kind != manifest.ActCall {
			m.errorf(rt.Pos, source.EBadAction, "return_to is only allowed with a CALL action, not %s", a.Kind)
			return t
		}
		b, ok := m.block(rt.V)
		if !ok {
			m.errorf(rt.Pos, source.EUnknownTarget, "return_to '%s' is not a block%s", rt.V, m.blockHint(rt.V))
			return unresolved()
		}
		t.ReturnTo = b.block.Key
	}
	return t
}
