package compiler

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"smith/isa"
	"smith/source"
	"smith/workers/confine"
)

// TestCheckLayoutMatchesLowering: CheckLayout refuses in a program (after
// the .smbc encoding) every literal path that the lowering refuses in its
// source with the same layout, and only those: the lowering's checks and
// the program's list of path fields must not drift apart. Every path
// field is present, each with its own path into .orchestrator/ (WORKSPACE
// is BASE).
func TestCheckLayoutMatchesLowering(t *testing.T) {
	t.Parallel()
	layout := &confine.Dir{Base: "/p", Workspace: "/p"}
	docs := []struct {
		name, src string
		fields    []string // the fields CheckLayout must name
	}{
		{"w.yaml", `version: "1.0"
name: paths
providers:
  mock: {defaults: {script: .orchestrator/dscript}}
agents:
  bot: {provider: mock, inbox: .orchestrator/inbox, instructions_file: .orchestrator/instr}
steps:
  - name: S1
    command: ["true"]
    input_file: .orchestrator/in
    output_file: ../../.orchestrator/out
    when: {any: [{file_exists: .orchestrator/exists}, {not: {file_exists: .orchestrator/exists2}}]}
    wait_for: {glob: ".orchestrator/glob*"}
    depends_on: {required: [.orchestrator/req], optional: [.orchestrator/opt, "${context.x}"]}
    on: {always: {goto: S2}}
  - name: S2
    provider: mock
    prompt_file: .orchestrator/prompt
    provider_params: {script: .orchestrator/script}
    on: {always: {goto: S3}}
  - name: S3
    send: {to: bot, file: .orchestrator/send}
    on: {always: {goto: S4}}
  - name: S4
    agent: bot
    prompt: hi
    input_file: "in/${run.id}"
    on: {always: {end: true}}
context: {x: y}
`, []string{"input_file", "output_file", "file_exists", "wait_for.glob", "depends_on.required", "depends_on.optional",
			"prompt_file", "provider_params.script", "defaults.script", "send.file", "inbox", "instructions_file"}},
		{"workflows.json", `{"version": "1", "entry": "N",
  "providers": {"mock": {"defaults": {"script": ".orchestrator/dmscript"}}},
  "workers": {"Worker:Gen": {"provider": "mock", "provider_params": {"script": ".orchestrator/mscript"}}},
  "nodes": {"N": {"entry_block": "A", "blocks": {
    "A": {"worker": "Worker:Gen", "payload_merge_strategy": ["PAYLOAD", "ARTIFACT:.orchestrator/art"],
          "transitions": [{"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "END"}]}}}}}
`, []string{"provider_params.script", "payload_merge_strategy", "defaults.script"}},
	}
	quoted := regexp.MustCompile(`path '([^']*)'`)
	paths := func(ds source.Diagnostics) []string {
		var out []string
		for _, d := range ds {
			if d.Code != source.EPathEscape {
				t.Errorf("unexpected diagnostic %s", d.Format())
				continue
			}
			out = append(out, quoted.FindStringSubmatch(d.Msg)[1])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, doc := range docs {
		_, lowered := Compile(doc.name, []byte(doc.src), Options{Layout: layout, ChecksOnly: true})
		res, ds := Compile(doc.name, []byte(doc.src), Options{})
		if ds.HasErrors() || res.Prog == nil {
			t.Fatalf("Compile(%s):\n%s", doc.name, diagText(ds))
		}
		data, err := res.Prog.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		p, err := isa.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		got := CheckLayout(p, layout)
		if g, w := paths(got), paths(lowered); !slices.Equal(g, w) || len(w) < len(doc.fields) {
			t.Errorf("%s: CheckLayout refuses %q, want the lowering's %q (at least %d)\n%s", doc.name, g, w, len(doc.fields), diagText(got))
		}
		text := diagText(got)
		for _, f := range doc.fields {
			if !strings.Contains(text, ": "+f+": path '") {
				t.Errorf("%s: CheckLayout names no %s:\n%s", doc.name, f, text)
			}
		}
		for _, d := range got {
			if d.Pos.File != doc.name || d.Pos.Line == 0 {
				t.Errorf("%s: %s has no position in the source", doc.name, d.Format())
			}
		}
		// A file_exists path is reported where the lowering reports it:
		// at its value, which the program keeps (Cond.XPos).
		at := map[string]source.Pos{}
		for _, d := range lowered {
			if m := quoted.FindStringSubmatch(d.Msg); m != nil {
				at[m[1]] = d.Pos
			}
		}
		for _, d := range got {
			if !strings.Contains(d.Msg, ": file_exists: ") {
				continue
			}
			if want := at[quoted.FindStringSubmatch(d.Msg)[1]]; d.Pos != want {
				t.Errorf("%s: CheckLayout reports %s at %s, want the lowering's %s", doc.name, d.Msg, d.Pos, want)
			}
		}
		// With the default layout (WORKSPACE = BASE/workspace) every path
		// stays in WORKSPACE.
		if ds := CheckLayout(p, &confine.Dir{Base: "/p", Workspace: "/p/workspace"}); len(ds) > 0 {
			t.Errorf("%s: CheckLayout with the default layout:\n%s", doc.name, diagText(ds))
		}
	}
}

// TestCheckLayoutFileExistsOldProgram: a program of isa version 4 or
// older keeps no position for a file_exists path (Cond.XPos decodes as
// zero): its path is reported at its condition, as those versions did.
func TestCheckLayoutFileExistsOldProgram(t *testing.T) {
	t.Parallel()
	src := "version: \"1.0\"\nname: w\nsteps:\n  - name: A\n    when: {file_exists: .orchestrator/x}\n    command: [\"true\"]\n    on: {always: {end: true}}\n"
	res, ds := Compile("w.yaml", []byte(src), Options{})
	if ds.HasErrors() {
		t.Fatal(diagText(ds))
	}
	layout := &confine.Dir{Base: "/p", Workspace: "/p"}
	if got := CheckLayout(res.Prog, layout); len(got) != 1 || got[0].Pos.String() != "w.yaml:5:25" {
		t.Fatalf("CheckLayout = %s, want one diagnostic at w.yaml:5:25 (the path)", diagText(got))
	}
	for i := range res.Prog.Blocks {
		if c := res.Prog.Blocks[i].When; c != nil {
			c.XPos = source.Pos{}
		}
	}
	if got := CheckLayout(res.Prog, layout); len(got) != 1 || got[0].Pos.String() != "w.yaml:5:11" {
		t.Fatalf("CheckLayout of an old program = %s, want one diagnostic at w.yaml:5:11 (the condition)", diagText(got))
	}
}

// TestCheckLayoutWorktree: a program that runs in its own git worktree is
// not checked (its WORKSPACE does not exist yet), as the lowering does not.
func TestCheckLayoutWorktree(t *testing.T) {
	t.Parallel()
	src := "version: \"1.0\"\nname: w\nisolation: git-worktree\nsteps:\n  - name: A\n    command: [\"true\"]\n    input_file: .orchestrator/in\n    on: {always: {end: true}}\n"
	res, ds := Compile("w.yaml", []byte(src), Options{})
	if ds.HasErrors() {
		t.Fatal(diagText(ds))
	}
	if ds := CheckLayout(res.Prog, &confine.Dir{Base: "/p", Workspace: "/p"}); len(ds) > 0 {
		t.Errorf("CheckLayout of a worktree program:\n%s", diagText(ds))
	}
}

// TestMockDefaultsScript: the mock's script set in its provider's
// defaults is checked like a step's own: lexically at check time and
// against the layout when run, at its value's position; in a program at
// the first step that calls the mock (a program keeps no position for a
// provider). A mock given a command of its own is no longer the mock: its
// script is a template key like any other.
func TestMockDefaultsScript(t *testing.T) {
	t.Parallel()
	doc := func(providers string) []byte {
		return []byte("version: \"1.0\"\nname: d\nproviders:\n  " + providers + "\nsteps:\n  - name: A\n    command: [\"true\"]\n    on: {always: {goto: B}}\n" +
			"  - name: B\n    provider: mock\n    prompt: hi\n    on: {always: {end: true}}\n")
	}
	layout := &confine.Dir{Base: "/p", Workspace: "/p"}
	for _, tc := range []struct {
		name, providers string
		layout          *confine.Dir
		want            string // the lowering's diagnostics
		smbc            string // CheckLayout's with layout
	}{
		{"lexical", "mock: {defaults: {script: ../../s.yaml}}", nil,
			"d.yaml:4:29: error: E_PATH_ESCAPE: path '../../s.yaml' resolves outside the project", ""},
		{"layout", "mock: {defaults: {script: .orchestrator/s.yaml}}", layout,
			"d.yaml:4:29: error: E_PATH_ESCAPE: path '.orchestrator/s.yaml' resolves into .orchestrator/",
			"d.yaml:9:5: error: E_PATH_ESCAPE: provider 'mock': defaults.script: path '.orchestrator/s.yaml' resolves into .orchestrator/"},
		{"inside", "mock: {defaults: {script: s.yaml}}", layout, "", ""},
		{"reference", "mock: {defaults: {script: \"${run.id}/../../s\"}}", layout, "", ""},
		{"own command", "mock: {command: [\"m\", \"${script}\"], defaults: {script: .orchestrator/s.yaml}}", layout, "", ""},
	} {
		_, ds := Compile("d.yaml", doc(tc.providers), Options{Layout: tc.layout, ChecksOnly: true})
		if got := diagText(ds); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: lowering:\n%s\nwant %q", tc.name, got, tc.want)
		}
		if tc.layout == nil {
			continue
		}
		res, ds := Compile("d.yaml", doc(tc.providers), Options{})
		if ds.HasErrors() {
			t.Fatalf("%s: %s", tc.name, diagText(ds))
		}
		got := diagText(CheckLayout(res.Prog, tc.layout))
		if tc.smbc == "" && got != "" || !strings.Contains(got, tc.smbc) {
			t.Errorf("%s: CheckLayout:\n%s\nwant %q", tc.name, got, tc.smbc)
		}
	}
}
