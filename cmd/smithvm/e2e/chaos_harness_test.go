package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// longRun turns on the long form of the harnesses: go test -run
// TestCrashHarness -long in this directory (or SMITH_LONG=1 for every package).
var longRun = flag.Bool("long", false, "run the long form of the crash harness (>= 200 trials)")

func isLong() bool { return *longRun || os.Getenv("SMITH_LONG") != "" }

// harnessYAML has a loop with a lines capture, a step retried after a
// failure, a max_visits cycle, an output_file and outputs read by a later
// step.
var harnessYAML = workflow("harness.yaml")

// harnessManifest has a CALL, a validation loop (an invalid reply, then a
// valid one), Internal:FileSystemWriter and command blocks.
var harnessManifest = workflow("harness_manifest.json")

// harnessFiles are the mock scripts of harnessManifest.
var harnessFiles = map[string]string{
	"workspace/val.json": `[
  {"reply": "not json at all"},
  {"match": "VALIDATION_ERROR", "reply": "{\"code\": \"fmt.Println(1)\", \"explanation\": \"prints 1\"}"}
]`,
	"workspace/files.json": `[{"reply": "[{\"filePath\": \"gen/a.go\", \"fileContent\": \"package gen\\n\"}, {\"filePath\": \"gen/b/b.go\", \"fileContent\": \"package b\\n\"}]"}]`,
}

// A harnessCase is one workflow of the crash harness.
type harnessCase struct {
	name, file, text string
	files            map[string]string
	counters         []string // counter files (under WORKSPACE/c) of steps that always run
}

var harnessCases = []harnessCase{
	{"yaml", "h.yaml", harnessYAML, nil, []string{"prep", "flaky", "body-a", "body-b", "body-c", "body-d", "again", "report"}},
	{"manifest", "h.json", harnessManifest, harnessFiles, []string{"work", "sub"}},
}

// setup writes the case's files into a fresh project.
func (c harnessCase) setup(t *testing.T) (*proj, string) {
	p := newProj(t)
	p.write("workspace/c/.keep", "")
	for f, text := range c.files {
		p.write(f, text)
	}
	return p, p.write(c.file, c.text)
}

// outcome is what must be equal between an interrupted and an
// uninterrupted run: the run's status, every step's status, exit code,
// output, lines, json and signal, the context, the payload, and the files
// the run wrote in WORKSPACE (counters and mock cursors aside).
func outcome(t *testing.T, p *proj, id string) string {
	t.Helper()
	var st struct {
		Status  string         `json:"status"`
		Context map[string]any `json:"context"`
		Payload []struct {
			Type, Content string
		} `json:"payload"`
		Steps map[string]struct {
			Status   string `json:"status"`
			ExitCode int    `json:"exit_code"`
			Output   string `json:"output"`
			Lines    any    `json:"lines"`
			JSON     any    `json:"json"`
			Signal   string `json:"signal"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(p.read(filepath.Join(".orchestrator/runs", id, "state.json"))), &st); err != nil {
		t.Fatalf("state of %s: %v", id, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "status %s\ncontext %v\n", st.Status, st.Context)
	for _, s := range st.Payload {
		fmt.Fprintf(&b, "payload %s:%s\n", s.Type, s.Content)
	}
	var names []string
	for n := range st.Steps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := st.Steps[n]
		fmt.Fprintf(&b, "step %s %s %d %q %v %v %s\n", n, s.Status, s.ExitCode, s.Output, s.Lines, s.JSON, s.Signal)
	}
	filepath.WalkDir(p.ws, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(p.ws, path)
		if err != nil || d.IsDir() || strings.HasPrefix(rel, "c/") || strings.HasSuffix(rel, ".json") || strings.HasSuffix(rel, ".pid") {
			return nil
		}
		data, _ := os.ReadFile(path)
		fmt.Fprintf(&b, "file %s %q\n", rel, data)
		return nil
	})
	return b.String()
}

// leftovers lists temporary files under BASE that a finished run should not
// have left: confine's .NAME.tmp-XXXX, *.tmp, RUN_ROOT/tmp entries.
func leftovers(base string) []string {
	var out []string
	filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		if strings.Contains(name, ".tmp") || filepath.Base(filepath.Dir(path)) == "tmp" {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// orphans lists the live processes whose working directory is in dir.
func orphans(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestCrashHarness SIGKILLs smithvm at random instants (the first
// milliseconds of a run, mid-step, inside a journal append or a snapshot
// write) over a YAML workflow and a manifest, resumes until the run is done,
// and checks: after every kill the state loads (or, killed before anything
// was saved, the run id is free again); the final results equal an
// uninterrupted run's; no step whose completion was durable ran again (the
// extra runs are at most the kills); no process of the run is left; no
// temporary file is left. Short form: a few trials per case; -long (or
// SMITH_LONG=1): 200 trials or more in all.
func TestCrashHarness(t *testing.T) {
	t.Parallel()
	trials := 3
	if isLong() {
		trials = 110
	}
	if n, err := strconv.Atoi(os.Getenv("SMITH_HARNESS_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	for _, c := range harnessCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ref, wf := c.setup(t)
			began := time.Now()
			want(t, ref.vm("run", wf, "--run-id", "ref"), 0)
			// The kills land within an uninterrupted run's length, so
			// that a faster Smith (or machine) still gets killed mid-run.
			span := max(time.Since(began)*3/4, 2*time.Millisecond)
			wantOut := outcome(t, ref, "ref")
			seed := uint64(time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(seed, 7))
			t.Logf("seed %d", seed)
			kills, reruns, stillborn := 0, 0, 0
			// (more trials while no kill has landed: a run can beat its kill)
			for trial := 0; trial < trials || (kills == 0 && trial < trials+10); trial++ {
				p, wf := c.setup(t)
				id := "h"
				args := []string{"run", wf, "--run-id", id}
				killed := 0
				for round := 0; round < 40; round++ {
					run := p.start(args...)
					// A third of the kills land in the first milliseconds,
					// the others anywhere in an uninterrupted run's span.
					var d time.Duration
					if rng.IntN(3) == 0 {
						d = time.Duration(rng.Int64N(int64(min(15*time.Millisecond, span))))
					} else {
						d = time.Duration(rng.Int64N(int64(span)))
					}
					time.Sleep(d)
					run.cmd.Process.Signal(syscall.SIGKILL)
					r := run.wait(t)
					if r.code == 0 {
						break
					}
					if r.code != 128+int(syscall.SIGKILL) {
						t.Fatalf("trial %d round %d: exit %d:\n%s", trial, round, r.code, r.stderr)
					}
					killed++
					if _, err := os.Stat(p.runRoot(id)); err != nil {
						continue // killed before the run existed: run again
					}
					s := p.vm("status", id, "--json")
					switch {
					case s.code == 0:
						args = []string{"resume", id}
					case strings.Contains(s.stderr, "run has no state"):
						stillborn++
						args = []string{"run", wf, "--run-id", id}
					default:
						t.Fatalf("trial %d round %d: the state does not load after a kill: exit %d\n%s", trial, round, s.code, s.stderr)
					}
				}
				if _, err := os.Stat(p.runRoot(id)); err != nil || p.vm("status", id).code != 0 {
					want(t, p.vm("run", wf, "--run-id", id), 0)
				} else {
					want(t, p.vm("resume", id), 0)
				}
				kills += killed
				if got := outcome(t, p, id); got != wantOut {
					t.Errorf("trial %d (%d kills): results differ from the uninterrupted run:\n%s", trial, killed, firstDiffLine(got, wantOut))
				}
				extra := 0
				for _, n := range c.counters {
					runs, once := p.count("c/"+n+".cnt"), ref.count("c/"+n+".cnt")
					if runs < once {
						t.Errorf("trial %d: %s ran %d times, the uninterrupted run %d", trial, n, runs, once)
					}
					extra += runs - once
				}
				if extra > killed {
					t.Errorf("trial %d: %d extra step runs after %d kills: a step whose completion was durable ran again", trial, extra, killed)
				}
				reruns += extra
				for _, pid := range orphans(p.ws) {
					if !gone(pid, 3*time.Second) {
						syscall.Kill(pid, syscall.SIGKILL)
						t.Errorf("trial %d: process %d of the run outlived it", trial, pid)
					}
				}
				if l := leftovers(p.base); len(l) > 0 {
					t.Errorf("trial %d: temporary files left: %v", trial, l)
				}
			}
			t.Logf("%s: %d trials, %d kills (%d before anything was saved), %d steps re-run", c.name, trials, kills, stillborn, reruns)
			if kills == 0 {
				t.Errorf("no kill landed: the harness tested nothing")
			}
		})
	}
}

// firstDiffLine shows the first line where got and want differ.
func firstDiffLine(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, a, b)
		}
	}
	return ""
}
