package manifest

import "strconv"

// Decoding fills the raw types of types.go from a Value tree. It trusts
// nothing: schema validation has already reported every value of the wrong
// shape, and decoding skips such values silently, so it never panics.
// Keyed entries (providers, agents, schemas, workers, nodes, blocks) are
// positioned at their key, which is where the document names them.

// DecodeWorkflow fills a Workflow from the tree of a YAML workflow. name is
// the file name recorded in Workflow.File.
func DecodeWorkflow(name string, v *Value) *Workflow {
	wf := &Workflow{File: name}
	if v == nil || v.Kind != KMap {
		return wf
	}
	wf.Pos = v.Pos
	for _, e := range v.Map {
		switch e.Key {
		case "version":
			wf.Version = decString(e.Val)
		case "name":
			wf.Name = decString(e.Val)
		case "strict_flow":
			wf.StrictFlow = decBool(e.Val)
		case "context":
			wf.Context = free(e.Val)
		case "secrets":
			wf.Secrets = decStringList(e.Val)
		case "env_allow":
			wf.EnvAllow = decStringList(e.Val)
		case "env":
			wf.Env = decStringMap(e.Val)
		case "defaults":
			wf.Defaults = decDefaults(e.Val)
		case "providers":
			wf.Providers = decProviders(e.Val)
		case "agents":
			wf.Agents = decAgents(e.Val)
		case "schemas":
			wf.Schemas = decSchemas(e.Val)
		case "steps":
			wf.Steps = decSteps(e.Val)
		case "test_command":
			wf.TestCommand = decStringList(e.Val)
		case "lint_command":
			wf.LintCommand = decStringList(e.Val)
		case "build_command":
			wf.BuildCommand = decStringList(e.Val)
		case "isolation":
			wf.Isolation = decString(e.Val)
		case "commit_artifacts":
			wf.CommitArtifacts = decBool(e.Val)
		}
	}
	return wf
}

// DecodeManifest fills a Manifest from the tree of a workflows.json
// manifest. Block.Order counts blocks across the whole manifest.
func DecodeManifest(name string, v *Value) *Manifest {
	mf := &Manifest{File: name}
	if v == nil || v.Kind != KMap {
		return mf
	}
	mf.Pos = v.Pos
	for _, e := range v.Map {
		switch e.Key {
		case "version":
			mf.Version = decString(e.Val)
		case "name":
			mf.Name = decString(e.Val)
		case "entry":
			mf.Entry = decString(e.Val)
		case "config":
			mf.Config = decConfig(e.Val)
		case "secrets":
			mf.Secrets = decStringList(e.Val)
		case "env_allow":
			mf.EnvAllow = decStringList(e.Val)
		case "env":
			mf.Env = decStringMap(e.Val)
		case "defaults":
			mf.Defaults = decDefaults(e.Val)
		case "providers":
			mf.Providers = decProviders(e.Val)
		case "agents":
			mf.Agents = decAgents(e.Val)
		case "workers":
			mf.Workers = decWorkers(e.Val)
		case "schemas":
			mf.Schemas = decSchemas(e.Val)
		case "nodes":
			blocks := 0
			mf.Nodes = decNodes(e.Val, &blocks)
		}
	}
	return mf
}

// free keeps v, a value that outlives the document's tree, as a copy of
// its own whose values are carved from one array: the JSON reader carves
// the tree's scalars from slabs shared with the rest of the tree
// (jsonParser.newLeaf), which a subtree kept by reference would keep
// alive, up to the whole tree's scalars for the static_memory of every
// node of a large manifest.
func free(v *Value) Free {
	if v == nil {
		return Free{}
	}
	vals := make([]Value, 0, countValues(v))
	return Free{V: copyValue(v, &vals)}
}

// countValues counts the values of the tree v.
func countValues(v *Value) int {
	n := 1
	for _, e := range v.List {
		if e != nil {
			n += countValues(e)
		}
	}
	for _, e := range v.Map {
		if e.Val != nil {
			n += countValues(e.Val)
		}
	}
	return n
}

// copyValue copies the tree v into vals, which has room for it.
func copyValue(v *Value, vals *[]Value) *Value {
	if v == nil {
		return nil
	}
	*vals = append(*vals, *v)
	c := &(*vals)[len(*vals)-1]
	if v.List != nil {
		c.List = make([]*Value, len(v.List))
		for i, e := range v.List {
			c.List[i] = copyValue(e, vals)
		}
	}
	if v.Map != nil {
		c.Map = make([]MapEntry, len(v.Map))
		for i, e := range v.Map {
			c.Map[i] = MapEntry{Key: e.Key, KeyPos: e.KeyPos, Val: copyValue(e.Val, vals)}
		}
	}
	return c
}

func isMap(v *Value) bool { return v != nil && v.Kind == KMap }

func decString(v *Value) String {
	if v == nil || v.Kind != KString {
		return String{}
	}
	return String{V: v.Str, Pos: v.Pos, Set: true}
}

func decNumber(v *Value) Number {
	if v == nil || v.Kind != KNumber {
		return Number{}
	}
	return Number{V: v.Num, Pos: v.Pos, Set: true}
}

func decBool(v *Value) Bool {
	if v == nil || v.Kind != KBool {
		return Bool{}
	}
	return Bool{V: v.Bool, Pos: v.Pos, Set: true}
}

// strings returns the string elements of a list, skipping the others.
func decStrings(v *Value) []String {
	out := make([]String, 0, len(v.List))
	for _, e := range v.List {
		if s := decString(e); s.Set {
			out = append(out, s)
		}
	}
	return out
}

func decStringList(v *Value) StringList {
	if v == nil || v.Kind != KList {
		return StringList{}
	}
	return StringList{V: decStrings(v), Pos: v.Pos, Set: true}
}

func decStringOrList(v *Value) StringOrList {
	switch {
	case v == nil:
		return StringOrList{}
	case v.Kind == KString:
		return StringOrList{V: []String{decString(v)}, Pos: v.Pos, Set: true}
	case v.Kind == KList:
		return StringOrList{V: decStrings(v), Pos: v.Pos, Set: true}
	}
	return StringOrList{}
}

func decScalar(v *Value) Scalar {
	if v == nil {
		return Scalar{}
	}
	switch v.Kind {
	case KString:
		return Scalar{Str: v.Str, IsString: true, Pos: v.Pos, Set: true}
	case KNumber:
		s := v.Str
		if s == "" {
			s = strconv.FormatFloat(v.Num, 'g', -1, 64)
		}
		return Scalar{Str: s, Pos: v.Pos, Set: true}
	case KBool:
		return Scalar{Str: strconv.FormatBool(v.Bool), Pos: v.Pos, Set: true}
	}
	return Scalar{}
}

func decStringMap(v *Value) StringMap {
	if !isMap(v) {
		return StringMap{}
	}
	m := StringMap{V: make([]KeyString, 0, len(v.Map)), Pos: v.Pos, Set: true}
	for _, e := range v.Map {
		if s := decString(e.Val); s.Set {
			m.V = append(m.V, KeyString{Key: e.Key, KeyPos: e.KeyPos, Val: s})
		}
	}
	return m
}

func decProviders(v *Value) map[string]*Provider {
	if !isMap(v) {
		return nil
	}
	out := make(map[string]*Provider, len(v.Map))
	for i, e := range v.Map {
		if !isMap(e.Val) {
			continue
		}
		p := &Provider{Key: e.Key, Pos: e.KeyPos, Order: i}
		for _, f := range e.Val.Map {
			switch f.Key {
			case "command":
				p.Command = decStringList(f.Val)
			case "defaults":
				p.Defaults = free(f.Val)
			case "prompt_transport":
				p.PromptTransport = decPromptTransport(f.Val)
			case "env":
				p.Env = decStringMap(f.Val)
			case "secrets":
				p.Secrets = decStringList(f.Val)
			case "home":
				p.Home = decString(f.Val)
			}
		}
		out[e.Key] = p
	}
	return out
}

func decAgents(v *Value) map[string]*Agent {
	if !isMap(v) {
		return nil
	}
	out := make(map[string]*Agent, len(v.Map))
	for i, e := range v.Map {
		if !isMap(e.Val) {
			continue
		}
		a := &Agent{Key: e.Key, Pos: e.KeyPos, Order: i}
		for _, f := range e.Val.Map {
			switch f.Key {
			case "provider":
				a.Provider = decStringOrList(f.Val)
			case "model":
				a.Model = decString(f.Val)
			case "permissions":
				a.Permissions = decString(f.Val)
			case "instructions":
				a.Instructions = decString(f.Val)
			case "instructions_file":
				a.InstructionsFile = decString(f.Val)
			case "inbox":
				a.Inbox = decString(f.Val)
			case "session":
				a.Session = decString(f.Val)
			}
		}
		out[e.Key] = a
	}
	return out
}

func decSchemas(v *Value) map[string]*SchemaDef {
	if !isMap(v) {
		return nil
	}
	out := make(map[string]*SchemaDef, len(v.Map))
	for i, e := range v.Map {
		if e.Val == nil || (e.Val.Kind != KMap && e.Val.Kind != KBool) {
			continue
		}
		out[e.Key] = &SchemaDef{Key: e.Key, Pos: e.KeyPos, Order: i, Schema: free(e.Val)}
	}
	return out
}

func decPromptTransport(v *Value) *PromptTransport {
	if !isMap(v) {
		return nil
	}
	pt := &PromptTransport{Pos: v.Pos}
	for _, e := range v.Map {
		switch e.Key {
		case "mode":
			pt.Mode = decString(e.Val)
		case "argv_template":
			pt.ArgvTemplate = decStringList(e.Val)
		}
	}
	return pt
}

func decSteps(v *Value) []*Step {
	if v == nil || v.Kind != KList {
		return nil
	}
	out := make([]*Step, 0, len(v.List))
	for _, e := range v.List {
		if s := decStep(e); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func decStep(v *Value) *Step {
	if !isMap(v) {
		return nil
	}
	s := &Step{Pos: v.Pos}
	for _, e := range v.Map {
		switch e.Key {
		case "name":
			s.Name = decString(e.Val)
		case "command":
			s.Command = decStringList(e.Val)
		case "provider":
			s.Provider = decStringOrList(e.Val)
		case "worker":
			s.Worker = decString(e.Val)
		case "for_each":
			s.ForEach = decForEach(e.Val)
		case "set_context":
			s.SetContext = free(e.Val)
		case "send":
			s.Send = decSend(e.Val)
		case "parallel":
			s.Parallel = decParallel(e.Val)
		case "agent":
			s.Agent = decString(e.Val)
		case "model":
			s.Model = decString(e.Val)
		case "permissions":
			s.Permissions = decString(e.Val)
		case "prompt":
			s.Prompt = decString(e.Val)
		case "prompt_file":
			s.PromptFile = decString(e.Val)
		case "provider_params":
			s.ProviderParams = free(e.Val)
		case "command_override":
			s.CommandOverride = decStringList(e.Val)
		case "prompt_transport":
			s.PromptTransport = decPromptTransport(e.Val)
		case "input_file":
			s.InputFile = decString(e.Val)
		case "output_file":
			s.OutputFile = decString(e.Val)
		case "output_capture":
			s.OutputCapture = decString(e.Val)
		case "allow_parse_error":
			s.AllowParseError = decBool(e.Val)
		case "validation_schema":
			s.ValidationSchema = decString(e.Val)
		case "when":
			s.When = decCond(e.Val)
		case "on":
			s.On = decOn(e.Val)
		case "timeout":
			s.Timeout = decNumber(e.Val)
		case "retry":
			s.Retry = decRetry(e.Val)
		case "env":
			s.Env = decStringMap(e.Val)
		case "secrets":
			s.Secrets = decStringList(e.Val)
		case "wait_for":
			s.WaitFor = decWaitFor(e.Val)
		case "depends_on":
			s.DependsOn = decDependsOn(e.Val)
		case "allow_missing_vars":
			s.AllowMissingVars = decStringList(e.Val)
		case "max_visits":
			s.MaxVisits = decNumber(e.Val)
		}
	}
	return s
}

func decForEach(v *Value) *ForEach {
	if !isMap(v) {
		return nil
	}
	fe := &ForEach{Pos: v.Pos}
	for _, e := range v.Map {
		switch e.Key {
		case "items":
			fe.Items = free(e.Val)
		case "as":
			fe.As = decString(e.Val)
		case "steps":
			fe.Steps = decSteps(e.Val)
		case "parallel":
			fe.Parallel = decNumber(e.Val)
		}
	}
	return fe
}

func decParallel(v *Value) *Parallel {
	if !isMap(v) {
		return nil
	}
	p := &Parallel{Pos: v.Pos, Max: decNumber(v.Get("max")), Branches: map[string][]*Step{}}
	if b := v.Get("branches"); isMap(b) {
		for _, e := range b.Map {
			steps := decSteps(e.Val)
			p.Branches[e.Key] = steps
			p.Order = append(p.Order, &Branch{Name: e.Key, Pos: e.KeyPos, Steps: steps})
		}
	}
	return p
}

func decRetry(v *Value) *Retry {
	if !isMap(v) {
		return nil
	}
	r := &Retry{Pos: v.Pos}
	for _, e := range v.Map {
		switch e.Key {
		case "attempts":
			r.Attempts = decNumber(e.Val)
		case "backoff_sec":
			r.BackoffSec = decNumber(e.Val)
		}
	}
	return r
}

func decWaitFor(v *Value) *WaitFor {
	if !isMap(v) {
		return nil
	}
	w := &WaitFor{Pos: v.Pos}
	for _, e := range v.Map {
		switch e.Key {
		case "glob":
			w.Glob = decString(e.Val)
		case "timeout_sec":
			w.TimeoutSec = decNumber(e.Val)
		case "poll_ms":
			w.PollMs = decNumber(e.Val)
		case "min_count":
			w.MinCount = decNumber(e.Val)
		case "consume":
			w.Consume = decBool(e.Val)
		}
	}
	return w
}

func decDependsOn(v *Value) *DependsOn {
	if !isMap(v) {
		return nil
	}
	d := &DependsOn{Pos: v.Pos}
	for _, e := range v.Map {
		switch e.Key {
		case "required":
			d.Required = decStringList(e.Val)
		case "optional":
			d.Optional = decStringList(e.Val)
		case "inject":
			d.Inject = decInject(e.Val)
		}
	}
	return d
}

// decInject accepts the boolean form and the object form (which sets
// Enabled true, positioned at the object).
func decInject(v *Value) *Inject {
	switch {
	case v == nil:
		return nil
	case v.Kind == KBool:
		return &Inject{Pos: v.Pos, Enabled: decBool(v)}
	case v.Kind != KMap:
		return nil
	}
	in := &Inject{Pos: v.Pos, Enabled: Bool{V: true, Pos: v.Pos, Set: true}}
	for _, e := range v.Map {
		switch e.Key {
		case "mode":
			in.Mode = decString(e.Val)
		case "instruction":
			in.Instruction = decString(e.Val)
		case "position":
			in.Position = decString(e.Val)
		}
	}
	return in
}

func decCond(v *Value) *Cond {
	if !isMap(v) {
		return nil
	}
	c := &Cond{Pos: v.Pos}
	for _, e := range v.Map {
		switch e.Key {
		case "step_ok":
			c.StepOK = decString(e.Val)
		case "file_exists":
			c.FileExists = decString(e.Val)
		case "equals":
			c.Equals = decEquals(e.Val)
		case "exit_code":
			c.ExitCode = decExitCode(e.Val)
		case "env_set":
			c.EnvSet = decString(e.Val)
		case "contains":
			c.Contains = decContains(e.Val)
		case "regex":
			c.Regex = decRegex(e.Val)
		case "number":
			c.Number = decNumberCond(e.Val)
		case "all":
			c.All = decConds(e.Val)
		case "any":
			c.Any = decConds(e.Val)
		case "not":
			c.Not = decCond(e.Val)
		}
	}
	return c
}

func decConds(v *Value) []*Cond {
	if v == nil || v.Kind != KList {
		return nil
	}
	out := make([]*Cond, 0, len(v.List))
	for _, e := range v.List {
		if c := decCond(e); c != nil {
			out = append(out, c)
		}
	}
	return out
}

func decEquals(v *Value) *Equals {
	if !isMap(v) {
		return nil
	}
	return &Equals{Pos: v.Pos, Left: decScalar(v.Get("left")), Right: decScalar(v.Get("right"))}
}

func decExitCode(v *Value) *ExitCodeCond {
	if !isMap(v) {
		return nil
	}
	return &ExitCodeCond{Pos: v.Pos, Step: decString(v.Get("step")), Op: decString(v.Get("op")), Value: decNumber(v.Get("value"))}
}

func decContains(v *Value) *Contains {
	if !isMap(v) {
		return nil
	}
	return &Contains{Pos: v.Pos, Haystack: decScalar(v.Get("haystack")), Needle: decScalar(v.Get("needle"))}
}

func decRegex(v *Value) *Regex {
	if !isMap(v) {
		return nil
	}
	return &Regex{Pos: v.Pos, Text: decScalar(v.Get("text")), Pattern: decString(v.Get("pattern")), Flags: decString(v.Get("flags"))}
}

func decNumberCond(v *Value) *NumberCond {
	if !isMap(v) {
		return nil
	}
	return &NumberCond{Pos: v.Pos, Left: decScalar(v.Get("left")), Op: decString(v.Get("op")), Right: decScalar(v.Get("right"))}
}

func decOn(v *Value) *On {
	if !isMap(v) {
		return nil
	}
	o := &On{Pos: v.Pos}
	for _, e := range v.Map {
		h := decHandler(e.Val)
		switch e.Key {
		case "success":
			o.Success = h
		case "failure":
			o.Failure = h
		case "timeout":
			o.Timeout = h
		case "skipped":
			o.Skipped = h
		case "validation_fail":
			o.ValidationFail = h
		case "max_visits":
			o.MaxVisits = h
		case "always":
			o.Always = h
		case "signals":
			o.Signals = decSignalHandlers(e.Val)
		}
	}
	return o
}

func decSignalHandlers(v *Value) map[string]*SignalHandler {
	if !isMap(v) {
		return nil
	}
	out := make(map[string]*SignalHandler, len(v.Map))
	for i, e := range v.Map {
		if h := decHandler(e.Val); h != nil {
			out[e.Key] = &SignalHandler{Key: e.Key, Pos: e.KeyPos, Order: i, Handler: h}
		}
	}
	return out
}

func decHandler(v *Value) *Handler {
	if !isMap(v) {
		return nil
	}
	return &Handler{Pos: v.Pos, Goto: decString(v.Get("goto")), End: decBool(v.Get("end")), Error: decString(v.Get("error")),
		Halt: decBool(v.Get("halt"))}
}

func decConfig(v *Value) *Config {
	if !isMap(v) {
		return nil
	}
	return &Config{
		Pos:             v.Pos,
		TestCommand:     decStringList(v.Get("test_command")),
		LintCommand:     decStringList(v.Get("lint_command")),
		BuildCommand:    decStringList(v.Get("build_command")),
		Isolation:       decString(v.Get("isolation")),
		CommitArtifacts: decBool(v.Get("commit_artifacts")),
	}
}

// decSend decodes a send: step kind.
func decSend(v *Value) *Send {
	if !isMap(v) {
		return nil
	}
	return &Send{
		Pos:     v.Pos,
		To:      decString(v.Get("to")),
		File:    decString(v.Get("file")),
		Content: decString(v.Get("content")),
		Name:    decString(v.Get("name")),
	}
}

// decDefaults decodes a top-level defaults: object.
func decDefaults(v *Value) *Defaults {
	if !isMap(v) {
		return nil
	}
	return &Defaults{
		Pos:         v.Pos,
		Model:       decString(v.Get("model")),
		Permissions: decString(v.Get("permissions")),
		Timeout:     decNumber(v.Get("timeout")),
		Retry:       decRetry(v.Get("retry")),
	}
}

func decWorkers(v *Value) map[string]*WorkerDef {
	if !isMap(v) {
		return nil
	}
	out := make(map[string]*WorkerDef, len(v.Map))
	for i, e := range v.Map {
		if !isMap(e.Val) {
			continue
		}
		w := &WorkerDef{Key: e.Key, Pos: e.KeyPos, Order: i}
		for _, f := range e.Val.Map {
			switch f.Key {
			case "provider":
				w.Provider = decStringOrList(f.Val)
			case "agent":
				w.Agent = decString(f.Val)
			case "provider_params":
				w.ProviderParams = free(f.Val)
			case "model":
				w.Model = decString(f.Val)
			case "permissions":
				w.Permissions = decString(f.Val)
			case "instructions":
				w.Instructions = decString(f.Val)
			case "output_type":
				w.OutputType = decString(f.Val)
			case "command":
				w.Command = decStringList(f.Val)
			case "timeout":
				w.Timeout = decNumber(f.Val)
			}
		}
		out[e.Key] = w
	}
	return out
}

// decNodes decodes the nodes; blocks counts blocks across all nodes.
func decNodes(v *Value, blocks *int) map[string]*Node {
	if !isMap(v) {
		return nil
	}
	out := make(map[string]*Node, len(v.Map))
	for i, e := range v.Map {
		if isMap(e.Val) {
			out[e.Key] = decNode(i, e, blocks)
		}
	}
	return out
}

// decNode decodes the object e.Val, the i-th entry of nodes; blocks
// counts blocks across all nodes.
func decNode(i int, e MapEntry, blocks *int) *Node {
	n := &Node{Key: e.Key, Pos: e.KeyPos, Order: i}
	for _, f := range e.Val.Map {
		switch f.Key {
		case "entry_block":
			n.EntryBlock = decString(f.Val)
		case "context_inheritance":
			n.ContextInheritance = decBool(f.Val)
		case "static_memory":
			n.StaticMemory = free(f.Val)
		case "blocks":
			n.Blocks = decBlocks(f.Val, blocks)
		}
	}
	return n
}

func decBlocks(v *Value, order *int) map[string]*Block {
	if !isMap(v) {
		return nil
	}
	out := make(map[string]*Block, len(v.Map))
	for _, e := range v.Map {
		if !isMap(e.Val) {
			continue
		}
		b := &Block{Key: e.Key, Pos: e.KeyPos, Order: *order}
		*order++
		for _, f := range e.Val.Map {
			switch f.Key {
			case "worker":
				b.Worker = decString(f.Val)
			case "validationSchema":
				b.ValidationSchema = ptr(decString(f.Val))
			case "payload_merge_strategy":
				b.PayloadMergeStrategy = ptr(decStringList(f.Val))
			case "transitions":
				b.Transitions = decTransitions(f.Val)
			case "max_visits":
				b.MaxVisits = ptr(decNumber(f.Val))
			case "timeout":
				b.Timeout = ptr(decNumber(f.Val))
			}
		}
		out[e.Key] = b
	}
	return out
}

func decTransitions(v *Value) []*Transition {
	if v == nil || v.Kind != KList {
		return nil
	}
	out := make([]*Transition, 0, len(v.List))
	for _, e := range v.List {
		if !isMap(e) {
			continue
		}
		t := &Transition{
			Pos:      e.Pos,
			OnSignal: decString(e.Get("on_signal")),
			Action:   decString(e.Get("action")),
		}
		if rt := e.Get("return_to"); rt != nil {
			t.ReturnTo = ptr(decString(rt))
		}
		out = append(out, t)
	}
	return out
}

// ptr returns a pointer to a copy of v (Block's and Transition's rare
// fields).
func ptr[T any](v T) *T { return &v }
