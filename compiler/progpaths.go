package compiler

import (
	"smith/isa"
	"smith/lang"
	"smith/manifest"
	"smith/source"
	"smith/workers/confine"
)

// CheckLayout checks the literal paths of a program that was not compiled
// here (a .smbc: smithc build knew no run's layout) against layout, with
// the checks the lowering makes on a source's paths when Options.Layout is
// set, so that a path its step would refuse refuses the run before any
// step runs (E_PATH_ESCAPE). A program keeps no position per path: each
// diagnostic is at its step's position (a file_exists at its value's:
// Cond.XPos) and names the step and the field. A program that runs in its own git
// worktree is not checked: its WORKSPACE does not exist yet.
func CheckLayout(p *isa.Program, layout *confine.Dir) source.Diagnostics {
	if p == nil || layout == nil || p.Config.Isolation == lang.IsolationWorktree {
		return nil
	}
	var ds source.Diagnostics
	report := func(pos source.Pos, what, field, path string, err error) {
		if err != nil {
			ds.Add(pos, source.EPathEscape, "%s: %s: path '%s' %s", what, field, path, violationReason(err))
		}
	}
	for _, pp := range programPaths(p) {
		what := "step '" + pp.step + "'"
		switch {
		case pp.agent != "":
			what = "agent '" + pp.agent + "'"
		case pp.provider != "":
			what = "provider '" + pp.provider + "'"
		}
		var err error
		if pp.output {
			err = outputViolation(pp.path, pp.step, layout)
		} else {
			err = pathViolation(pp.path, layout)
		}
		report(pp.pos, what, pp.field, pp.path, err)
	}
	ds.Sort()
	return ds
}

// A progPath is one literal path of a program: the step (or agent) and
// field that hold it and the best position the program keeps for it.
type progPath struct {
	step, agent, provider, field, path string
	// output is set for an output_file, which is relative to
	// WORKSPACE/artifacts/STEP (others: to WORKSPACE).
	output bool
	pos    source.Pos
}

// programPaths lists the literal paths of p's blocks, providers and
// agents: the fields the lowering checks with checkPath and
// checkOutputPath.
func programPaths(p *isa.Program) []progPath {
	var out []progPath
	for _, b := range p.Blocks {
		add := func(field string, t *lang.Template, output bool, pos source.Pos) {
			if t != nil && t.IsLiteral() && t.Literal() != "" {
				out = append(out, progPath{step: b.ID, field: field, path: t.Literal(), output: output, pos: pos})
			}
		}
		condPaths(b.When, add)
		st := b.Step
		if st == nil {
			continue
		}
		add("input_file", st.InputFile, false, b.Pos)
		add("output_file", st.OutputFile, true, b.Pos)
		add("prompt_file", st.PromptFile, false, b.Pos)
		if contains(st.Providers, lang.PresetMock) {
			add("provider_params."+lang.KeyScript, scriptField(st.ProviderParams), false, b.Pos)
		}
		if w := st.WaitFor; w != nil {
			add("wait_for.glob", &w.Glob, false, b.Pos)
		}
		if d := st.DependsOn; d != nil {
			for i := range d.Required {
				add("depends_on.required", &d.Required[i], false, b.Pos)
			}
			for i := range d.Optional {
				add("depends_on.optional", &d.Optional[i], false, b.Pos)
			}
		}
		if s := st.Send; s != nil {
			add("send.file", s.File, false, b.Pos)
		}
		for _, e := range st.PayloadMerge {
			if layer, arg, _, ok := lang.ParseLayer(e); ok && layer == lang.LayerArtifact {
				t := lang.Lit(arg)
				add("payload_merge_strategy", &t, false, b.Pos)
			}
		}
	}
	for i := range p.Providers {
		if t := mockDefaultScript(&p.Providers[i]); t != nil && t.IsLiteral() && t.Literal() != "" {
			out = append(out, progPath{provider: lang.PresetMock, field: "defaults." + lang.KeyScript, path: t.Literal(), pos: mockPos(p)})
		}
	}
	for _, a := range p.Agents {
		pos := agentPos(p, a.Name)
		for _, f := range [...]struct{ field, v string }{{"inbox", a.Inbox}, {"instructions_file", a.InstructionsFile}} {
			// An agent keeps these as written: literal when they parse
			// to one.
			if t, ds := manifest.ParseTemplate(f.v, pos); len(ds) == 0 && t.IsLiteral() && t.Literal() != "" {
				out = append(out, progPath{agent: a.Name, field: f.field, path: t.Literal(), pos: pos})
			}
		}
	}
	return out
}

// condPaths adds the file_exists paths of a condition tree, each at its
// value's position (its condition's in a program that keeps none).
func condPaths(c *isa.Cond, add func(field string, t *lang.Template, output bool, pos source.Pos)) {
	if c == nil {
		return
	}
	if c.Op == isa.CondFileExists {
		pos := c.XPos
		if !pos.IsValid() {
			pos = c.Pos // a program of isa version 4 or older
		}
		add("file_exists", c.X, false, pos)
	}
	for i := range c.Sub {
		condPaths(&c.Sub[i], add)
	}
}

// agentPos is the position of the first block of agent name (a program
// keeps none for an agent), else the program's source file.
func agentPos(p *isa.Program, name string) source.Pos {
	for _, b := range p.Blocks {
		if b.Agent == name {
			return b.Pos
		}
	}
	return source.Pos{File: p.Source}
}

// scriptField is the mock's script among a step's provider_params or a
// provider's defaults (nil: none, or not a string).
func scriptField(fs []isa.Field) *lang.Template {
	for i := range fs {
		if fs[i].Key == lang.KeyScript && fs[i].Val.Kind == isa.TString {
			return &fs[i].Val.Str
		}
	}
	return nil
}

// mockDefaultScript is the script that provider def's defaults give the
// built-in mock (nil: none; a def with a command of its own is not the
// mock, see provider.Lookup).
func mockDefaultScript(def *isa.ProviderDef) *lang.Template {
	if def.Name != lang.PresetMock || len(def.Command) > 0 {
		return nil
	}
	return scriptField(def.Defaults)
}

// mockPos is the position of the first step that calls the mock (a
// program keeps none for a provider), else the program's source file.
func mockPos(p *isa.Program) source.Pos {
	for _, b := range p.Blocks {
		if b.Step != nil && contains(b.Step.Providers, lang.PresetMock) {
			return b.Pos
		}
	}
	return source.Pos{File: p.Source}
}
