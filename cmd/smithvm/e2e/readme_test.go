package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// runnableBlocks returns the ```sh blocks of a markdown document that
// follow a <!-- runnable --> line.
func runnableBlocks(t *testing.T, doc string) []string {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- runnable -->\n```sh\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestREADMECommands runs every README block marked <!-- runnable --> as
// written, with sh -e, in a temp directory holding a copy of examples/ and
// testdata/, with the built smithc and smithvm first on PATH ("go run
// ./cmd/smithvm" and "go run ./cmd/smithc" stand for them). Each block must
// exit 0, and no run may fail (ERROR: Run ...).
func TestREADMECommands(t *testing.T) {
	t.Parallel()
	blocks := runnableBlocks(t, repoFile(t, "README.md"))
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d runnable blocks, want the demo, check, resume, agents and feature ones", len(blocks))
	}
	if !strings.Contains(blocks[0], "examples/demo/demo.yaml") {
		t.Errorf("the first runnable block is not the demo:\n%s", blocks[0])
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := filepath.Dir(built.smithvm)
	for i, block := range blocks {
		dir := t.TempDir()
		for _, d := range []string{"examples", "testdata"} {
			if err := os.CopyFS(filepath.Join(dir, d), os.DirFS(repoFile(t, d))); err != nil {
				t.Fatal(err)
			}
		}
		script := strings.NewReplacer("go run ./cmd/smithvm", "smithvm", "go run ./cmd/smithc", "smithc").Replace(block)
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		cmd := exec.CommandContext(ctx, sh, "-e", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + t.TempDir(), testCacheEnv()}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README block %d failed (%v):\n%s\n--- output ---\n%s", i+1, err, block, out)
			continue
		}
		if regexp.MustCompile(`(?m)^ERROR: (Run |E_)`).Match(out) {
			t.Errorf("README block %d printed a run failure:\n%s\n--- output ---\n%s", i+1, block, out)
		}
		if i == 0 && !(strings.Contains(string(out), "INFO: Run folder: ") && strings.Contains(string(out), "INFO: Artifacts: ") && strings.Contains(string(out), "INFO: Next: smithvm status ")) {
			t.Errorf("the demo does not say where its outputs are:\n%s", out)
		}
	}
}

// TestDocsSelfContained: the README and docs/ never send readers outside
// the repository, their relative links name files that exist, and the
// README's picture is the demo's current graph.
func TestDocsSelfContained(t *testing.T) {
	t.Parallel()
	docs, _ := filepath.Glob(repoFile(t, "docs/*.md"))
	docs = append(docs, repoFile(t, "README.md"))
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, d := range docs {
		data, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "../shared") {
			t.Errorf("%s points outside the repository (../shared)", d)
		}
		if m := contractRef.FindString(string(data)); m != "" {
			t.Errorf("%s cites %q, a document users do not have: link the reference page in docs/ instead", d, m)
		}
		if m := theContract.FindString(string(data)); m != "" {
			t.Errorf("%s cites %q, a document users do not have: say what it asks for instead", d, m)
		}
		if m := sectionRef.FindString(string(data)); m != "" {
			t.Errorf("%s cites %q, a section of a document users do not have: link the page in docs/ that says it instead", d, m)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(d), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", d, target)
			}
		}
	}
	svg, err := os.ReadFile(repoFile(t, "docs/demo-graph.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"Design", "Implement", "Build", "Write", "Count", "Record", "Report"} {
		if !strings.Contains(string(svg), ">"+step+"</text>") {
			t.Errorf("docs/demo-graph.svg lacks the step %s: regenerate it (docs/testing.md)", step)
		}
	}
}

// TestGettingStarted walks docs/getting-started.md as a newcomer would, in
// one shell with a fresh HOME, starting in a copy of the repository's
// examples (a cd in one block holds for the next): every block marked <!-- runnable --> runs,
// in order, and a block marked <!-- file: PATH --> is written to PATH
// first. The built binaries are first on PATH.
func TestGettingStarted(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(repoFile(t, "docs/getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- (runnable|file: (\\S+)) -->\n```[a-z]*\n(.*?)```")
	var script strings.Builder
	steps := 0
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		steps++
		if m[1] == "runnable" {
			script.WriteString(m[3])
			continue
		}
		path := strings.Replace(m[2], "~", "$HOME", 1)
		script.WriteString("mkdir -p \"$(dirname " + path + ")\"\ncat > " + path + " <<'SMITH_EOF'\n" + m[3] + "SMITH_EOF\n")
	}
	if steps < 4 {
		t.Fatalf("docs/getting-started.md has %d marked blocks, want the demo, the project, the workflow and its run", steps)
	}
	text := script.String()
	dir, home := t.TempDir(), t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(repoFile(t, "examples"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", text)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + filepath.Dir(built.smithvm) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("getting-started failed (%v):\n%s\n--- output ---\n%s", err, text, out)
	}
	if got, _ := os.ReadFile(filepath.Join(home, "hello", "workspace", "artifacts", "Greet", "greeting.txt")); string(got) != "hello smith\n" {
		t.Errorf("greeting.txt = %q, want %q\n%s", got, "hello smith\n", out)
	}
	// The tutorial shows its result where it tells the reader to look.
	for _, want := range []string{"ok: 1 file, 0 errors, 0 warnings", "INFO: Step 'Shout' completed successfully", "Greet ", "Shout ", "\nHELLO SMITH\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// contractRef matches a citation of the behaviour contract by section
// number, which only the developers have.
var contractRef = regexp.MustCompile(`CONTRACT(\.md)?\s+(sections?\s+)?[0-9]`)

// theContract matches a mention of the behaviour contract in prose.
var theContract = regexp.MustCompile(`\bthe contract\b`)

// sectionRef matches a bare section number ("the section 3.5", "STYLE.md
// section 1"): the README and docs/ have no numbered sections, so it names
// one of the developers' documents.
var sectionRef = regexp.MustCompile(`\bsections?\s+[0-9]+(\.[0-9]+)*\b`)

// TestREADMECommandList: the README's list of the two programs' commands
// names every command their --help lists.
func TestREADMECommandList(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(repoFile(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{built.smithc, built.smithvm} {
		name := filepath.Base(bin)
		out, err := exec.Command(bin, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", name, err, out)
		}
		re := regexp.MustCompile(`(?m)^  ` + name + ` ([a-z][a-z-]*)\b`)
		cmds := re.FindAllStringSubmatch(string(out), -1)
		if len(cmds) < 5 {
			t.Fatalf("%s --help lists %d commands:\n%s", name, len(cmds), out)
		}
		for _, m := range cmds {
			if !regexp.MustCompile(`(?m)^` + name + ` ` + m[1] + `\b`).Match(readme) {
				t.Errorf("README.md's command list lacks %s %s", name, m[1])
			}
		}
	}
}

// TestDocsRunnable runs every block marked <!-- runnable --> of every
// docs/ page but getting-started.md (TestGettingStarted walks that one in
// order, in one shell) as TestREADMECommands runs the README's: each alone,
// with sh -e, in a temp directory holding copies of examples/ and testdata/,
// with a fresh HOME and the built binaries first on PATH. Each must exit 0
// and print no run failure.
func TestDocsRunnable(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob(repoFile(t, "docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Dir(built.smithvm)
	total := 0
	for _, page := range pages {
		if filepath.Base(page) == "getting-started.md" {
			continue
		}
		for i, block := range runnableBlocks(t, page) {
			total++
			name := strings.TrimSuffix(filepath.Base(page), ".md") + "/" + strconv.Itoa(i+1)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				for _, d := range []string{"examples", "testdata"} {
					if err := os.CopyFS(filepath.Join(dir, d), os.DirFS(repoFile(t, d))); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
				defer cancel()
				cmd := exec.CommandContext(ctx, "sh", "-e", "-c", block)
				cmd.Dir = dir
				cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s block %d failed (%v):\n%s\n--- output ---\n%s", filepath.Base(page), i+1, err, block, out)
				}
				if regexp.MustCompile(`(?m)^ERROR: (Run |E_)`).Match(out) {
					t.Errorf("%s block %d printed a run failure:\n%s\n--- output ---\n%s", filepath.Base(page), i+1, block, out)
				}
			})
		}
	}
	if total < 4 {
		t.Errorf("docs/ has %d runnable blocks outside getting-started.md, want at least the cookbook's four", total)
	}
}

// TestDocsExamplesCheck: every whole workflow the README and docs/ show (a
// ```yaml block with a top-level version:, a ```json block with nodes) passes
// smithc check with no error and no warning, as a reader who copies it
// expects.
func TestDocsExamplesCheck(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob(repoFile(t, "docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, repoFile(t, "README.md"))
	block := regexp.MustCompile("(?s)```(yaml|json)\n(.*?)```")
	dir := t.TempDir()
	n := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatchIndex(data, -1) {
			lang, body := string(data[m[2]:m[3]]), data[m[4]:m[5]]
			whole := lang == "yaml" && regexp.MustCompile(`(?m)^version:`).Match(body) ||
				lang == "json" && bytes.Contains(body, []byte(`"nodes"`)) && bytes.Contains(body, []byte(`"version"`))
			if !whole {
				continue
			}
			n++
			line := bytes.Count(data[:m[0]], []byte("\n")) + 1
			file := filepath.Join(dir, fmt.Sprintf("%s_%d.%s", strings.TrimSuffix(filepath.Base(page), ".md"), line, lang))
			if err := os.WriteFile(file, body, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(built.smithc, "check", file).CombinedOutput()
			if err != nil || !strings.Contains(string(out), " 0 errors, 0 warnings") {
				t.Errorf("%s:%d: the example does not check clean (%v):\n%s", filepath.Base(page), line, err, out)
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d whole examples, want at least the README's, getting-started's two and the references'", n)
	}
}
