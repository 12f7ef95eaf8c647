// Command sessioncost measures what session: continue saves in the team
// example (examples/team): it runs the team with a real agent CLI against
// the fake model server twice, once as shipped (the engineer continues its
// session, so its note to QA carries neither the design nor the code it
// wrote) and once with session: fresh, where that note's prompt has to carry
// both again (the design and the engineer's reply are added to it), and
// prints, per provider call, the size of the prompt as the server received
// it (the last user message) and of the whole request, in bytes and in
// estimated tokens (bytes/4), with the totals.
//
//	go run ./bench/sessioncost [-cli claude,gemini,codex] [-clis DIR] [-smithvm PATH] [-workflow FILE]
//
// The fake server answers from the example's own mock scripts
// (examples/team/project/team-mock), so the run takes the same path as the
// offline one. -workflow measures another version of team.yaml as it is
// (e.g. an older one: git show main:examples/team/team.yaml > old.yaml),
// with its own session: lines. A benchmark, not a test: it prints figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"smith/internal/fakemodel"
	"smith/workers/provider"
)

// calls names the team's provider calls by a piece of their prompt, in
// the order the run makes them.
var calls = []struct{ step, marker string }{
	{"Design", "Design the"},
	{"ReadDesign", "Read the design in your inbox"},
	{"Hello", "Implement task 'hello'"},
	{"Goodbye", "Implement task 'goodbye'"},
	{"HelloNote", "note on task 'hello'"},
	{"GoodbyeNote", "note on task 'goodbye'"},
	{"Review", "Review the change for"},
	{"Answer", "Answer QA"},
	{"Verdict", "give your verdict"},
}

// freshNotes turns the shipped team into its session: fresh equivalent:
// each later prompt of an agent carries the history its continued session
// holds (the notes: the design and the code; the architect's answer: its
// design; QA's verdict: its question).
var freshNotes = [][2]string{
	{"session: continue", "session: fresh"}, // architect
	{"session: continue", "session: fresh"}, // engineer
	{"session: continue", "session: fresh"}, // qa
	{`prompt: "Answer QA's question."`, `prompt: "Answer QA's question.\n\nYour design:\n\n${steps.Design.output}"`},
	{`prompt: "Read the architect's answer and give your verdict."`, `prompt: "Read the architect's answer and give your verdict.\n\nYour question:\n\n${steps.Review.output}"`},
	{`what you wrote and how to check it."
            provider_params: {script: team-mock/engineer.script}
            on: {success: {goto: _branch_end}, failure: {error: "no note on task hello"}}`,
		`what you wrote and how to check it.\n\nThe design:\n\n${steps.Design.output}\n\nWhat you wrote:\n\n${steps.Hello.output}"
            provider_params: {script: team-mock/engineer.script}
            on: {success: {goto: _branch_end}, failure: {error: "no note on task hello"}}`},
	{`what you wrote and how to check it."
            provider_params: {script: team-mock/engineer.script}
            on: {success: {goto: _branch_end}, failure: {error: "no note on task goodbye"}}`,
		`what you wrote and how to check it.\n\nThe design:\n\n${steps.Design.output}\n\nWhat you wrote:\n\n${steps.Goodbye.output}"
            provider_params: {script: team-mock/engineer.script}
            on: {success: {goto: _branch_end}, failure: {error: "no note on task goodbye"}}`},
}

// freshTwin returns the shipped team.yaml (src) with session: fresh and
// the notes' prompts carrying the history.
func freshTwin(src string) (string, error) {
	for _, r := range freshNotes {
		if !strings.Contains(src, r[0]) {
			return "", fmt.Errorf("team.yaml no longer has %q: update freshNotes", r[0])
		}
		src = strings.Replace(src, r[0], r[1], 1)
	}
	return src, nil
}

func main() {
	home, _ := os.UserHomeDir()
	which := flag.String("cli", "claude", "the CLIs to measure, comma-separated: claude, gemini, codex")
	dir := flag.String("clis", filepath.Join(home, ".cache", "smith-clis", "node_modules", ".bin"), "the folder of the claude, gemini and codex programs")
	smithvm := flag.String("smithvm", "", "the smithvm binary (default: built from ./cmd/smithvm)")
	workflow := flag.String("workflow", "", "measure this team.yaml as it is instead of the shipped one and its fresh twin")
	flag.Parse()
	if err := run(strings.Split(*which, ","), *dir, *smithvm, *workflow); err != nil {
		fmt.Fprintln(os.Stderr, "sessioncost:", err)
		os.Exit(1)
	}
}

func run(which []string, dir, smithvm, workflow string) error {
	tmp, err := os.MkdirTemp("", "sessioncost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if smithvm == "" {
		smithvm = filepath.Join(tmp, "smithvm")
		if out, err := exec.Command("go", "build", "-o", smithvm, "./cmd/smithvm").CombinedOutput(); err != nil {
			return fmt.Errorf("build smithvm: %v\n%s", err, out)
		}
	}
	rules, err := mockRules(".")
	if err != nil {
		return err
	}
	variants := map[string]string{}
	var order []string
	if workflow != "" {
		b, err := os.ReadFile(workflow)
		if err != nil {
			return err
		}
		variants[workflow], order = string(b), []string{workflow}
	} else {
		b, err := os.ReadFile("examples/team/team.yaml")
		if err != nil {
			return fmt.Errorf("%v (run it in the repository's root)", err)
		}
		fresh, err := freshTwin(string(b))
		if err != nil {
			return err
		}
		variants["fresh"], variants["continue"], order = fresh, string(b), []string{"fresh", "continue"}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("date %s, load %s", time.Now().UTC().Format(time.RFC3339), load)
	for _, name := range which {
		c, ok := fakemodel.CLIFor(name)
		if !ok {
			return fmt.Errorf("unknown CLI %q", name)
		}
		totals := map[string][4]int{}
		for i, v := range order {
			figs, err := once(filepath.Join(tmp, fmt.Sprintf("%s-%d", name, i)), smithvm, dir, c, variants[v], rules)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", name, v, err)
			}
			fmt.Printf("\n%s, %s:\n%-12s %9s %8s %10s %8s\n", name, v, "call", "prompt B", "~tokens", "request B", "~tokens")
			var tot [4]int
			for _, f := range figs {
				fmt.Printf("%-12s %9d %8d %10d %8d\n", f.step, f.prompt, tokens(f.prompt), f.body, tokens(f.body))
				tot[0], tot[1], tot[2], tot[3] = tot[0]+f.prompt, tot[1]+tokens(f.prompt), tot[2]+f.body, tot[3]+tokens(f.body)
			}
			fmt.Printf("%-12s %9d %8d %10d %8d\n", "total", tot[0], tot[1], tot[2], tot[3])
			totals[v] = tot
		}
		if len(order) == 2 {
			f, c := totals["fresh"], totals["continue"]
			fmt.Printf("\n%s: continue saves %d prompt bytes (~%d tokens, %.1f%%) and %d request bytes (~%d tokens, %.1f%%) over fresh\n",
				name, f[0]-c[0], f[1]-c[1], pct(f[0]-c[0], f[0]), f[2]-c[2], f[3]-c[3], pct(f[2]-c[2], f[2]))
		}
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("load at the end %s", load)
	return nil
}

// tokens estimates a token count from a byte count (~4 bytes a token for
// English text and JSON).
func tokens(bytes int) int { return (bytes + 3) / 4 }

func pct(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// mockRules turns the example's mock scripts into the fake server's rules
// (their matches are plain text), so the real CLI gets the mock's replies.
func mockRules(root string) ([]fakemodel.Rule, error) {
	var rules []fakemodel.Rule
	for _, s := range []string{"architect", "engineer", "qa"} {
		b, err := os.ReadFile(filepath.Join(root, "examples/team/project/team-mock", s+".script"))
		if err != nil {
			return nil, err
		}
		entries, err := provider.ParseScript(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s.script: %w", s, err)
		}
		for _, e := range entries {
			rules = append(rules, fakemodel.Rule{Match: e.Match, Reply: fakemodel.Reply{Text: e.Reply}})
		}
	}
	return rules, nil
}

// A figure is one provider call's request as the server saw it.
type figure struct {
	step         string
	prompt, body int
}

// once runs the team (wf) with CLI c against a new fake server in a new
// repository under base, and returns the calls' requests.
func once(base, smithvm, dir string, c fakemodel.CLI, wf string, rules []fakemodel.Rule) ([]figure, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := fakemodel.Start(ctx, rules, fakemodel.Options{})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	home, repo := filepath.Join(base, "home"), filepath.Join(base, "repo")
	files := map[string]string{
		".claude/settings.json": `{"env": {"ANTHROPIC_BASE_URL": "` + srv.URL + `"}}`,
		".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "model": {"name": "gemini-2.5-pro"}}`,
		".codex/config.toml": "model = \"gpt-fake\"\nmodel_provider = \"gateway\"\n[model_providers.gateway]\nname = \"gateway\"\nbase_url = \"" + srv.URL +
			"/v1\"\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"responses\"\n",
	}
	for rel, text := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return nil, err
		}
	}
	if err := os.CopyFS(repo, os.DirFS("examples/team/project")); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=me", "-c", "user.email=me@localhost", "commit", "-qm", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("git %v: %v\n%s", args, err, out)
		}
	}
	const line = "provider: &ai mock "
	if !strings.Contains(wf, line) {
		return nil, fmt.Errorf("the workflow has no %q line", line)
	}
	wfPath := filepath.Join(base, "team.yaml")
	if err := os.WriteFile(wfPath, []byte(strings.Replace(wf, line, "provider: &ai "+c.Name+" ", 1)), 0o644); err != nil {
		return nil, err
	}
	env := []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "HOME=" + home,
		"ANTHROPIC_API_KEY=fake-key-anthropic-0123", "GEMINI_API_KEY=fake-key-gemini-0123", "GATEWAY_API_KEY=fake-key-gateway-0123",
		"GOOGLE_GEMINI_BASE_URL=" + srv.URL, "GOTOOLCHAIN=local"}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} { // the test step's go, warm
		if out, err := exec.Command("go", "env", k).Output(); err == nil {
			env = append(env, k+"="+strings.TrimSpace(string(out)))
		}
	}
	cmd := exec.Command(smithvm, "run", wfPath, "--workspace", repo, "--run-id", "team")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 4 {
		return nil, fmt.Errorf("smithvm run: exit %d (want 4, the halt for approval): %v\n%s", code, err, out)
	}
	var figs []figure
	for _, l := range srv.Requests() {
		if l.Protocol != c.Protocol {
			continue
		}
		step := "(other)" // the CLI's own requests, if any
		for _, k := range calls {
			if strings.Contains(l.Prompt, k.marker) {
				step = k.step
				break
			}
		}
		figs = append(figs, figure{step, len(l.Prompt), len(l.Body)})
	}
	rank := func(f figure) int {
		for i, k := range calls {
			if k.step == f.step {
				return i
			}
		}
		return len(calls)
	}
	// The branches' calls interleave: list them in the workflow's order.
	slices.SortStableFunc(figs, func(a, b figure) int { return rank(a) - rank(b) })
	return figs, nil
}
