package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/internal/docgen"
)

// TestCLIDocs: the smithc part of docs/cli.md is exactly the help of every
// command, built from the same flag-set builders the commands use.
// Regenerate: go test ./cmd/smithc -run TestCLIDocs -update.
func TestCLIDocs(t *testing.T) {
	var b strings.Builder
	b.WriteString("```\n" + usage + "```\n")
	for _, c := range commands() {
		fs := c.Flags(&flagVals{}, io.Discard)
		var h bytes.Buffer
		fs.SetOutput(&h)
		fs.Usage()
		fmt.Fprintf(&b, "\n### %s\n\n```\n%s```\n", fs.Name(), h.String())
	}
	docgen.Region(t, "../../docs/cli.md", "smithc", b.String(), *update, "go test ./cmd/smithc ./cmd/smithvm -run TestCLIDocs -update")
}

// TestCheckSARIF: --format sarif prints a SARIF 2.1.0 log with one result
// per diagnostic, each naming a rule of the log and its file:line:col, and
// the same exit status as the text form.
func TestCheckSARIF(t *testing.T) {
	wd := scratch(t)
	text := runIn(t, wd, []string{"check", "testdata/many.yaml", "testdata/warn.yaml"})
	r := runIn(t, wd, []string{"check", "--format", "sarif", "testdata/many.yaml", "testdata/warn.yaml"})
	if r.status != text.status || r.status != 2 {
		t.Fatalf("exit status %d (text form: %d), want 2", r.status, text.status)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &log); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "smithc" {
		t.Fatalf("version %q, %d runs: want one 2.1.0 run of smithc", log.Version, len(log.Runs))
	}
	lines := strings.Split(strings.TrimSpace(text.stdout), "\n")
	run := log.Runs[0]
	if len(run.Results) != len(lines) {
		t.Fatalf("%d results, want one per diagnostic (%d):\n%s", len(run.Results), len(lines), text.stdout)
	}
	for i, res := range run.Results {
		if res.RuleIndex < 0 || res.RuleIndex >= len(run.Tool.Driver.Rules) || run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %d: ruleIndex %d does not name rule %s", i, res.RuleIndex, res.RuleID)
		}
		loc := res.Locations[0].PhysicalLocation
		got := fmt.Sprintf("%s:%d:%d: %s: %s: %s", loc.ArtifactLocation.URI, loc.Region.StartLine, loc.Region.StartColumn, res.Level, res.RuleID, res.Message.Text)
		if got != lines[i] {
			t.Errorf("result %d = %q, want the text form's %q", i, got, lines[i])
		}
	}
}

// TestCheckSummary: check ends with one summary line on stderr, also when
// there is nothing to report.
func TestCheckSummary(t *testing.T) {
	wd := scratch(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "testdata/clean.yaml"}, "ok: 1 file, 0 errors, 0 warnings\n"},
		{[]string{"check", "testdata/clean.yaml", "testdata/warn.yaml"}, "ok: 2 files, 0 errors, 1 warning\n"},
		{[]string{"check", "--json", "testdata/errors.yaml"}, "failed: 1 file, "},
	} {
		r := runIn(t, wd, tt.args)
		if !strings.HasPrefix(r.stderr, tt.want) {
			t.Errorf("%v: stderr %q, want it to start with %q", tt.args, r.stderr, tt.want)
		}
	}
}

// TestFmtWrite: fmt -w rewrites a file into the form fmt prints, after
// which --check finds nothing to do; the meaning is unchanged (check
// reports the same).
func TestFmtWrite(t *testing.T) {
	wd := scratch(t)
	printed := runIn(t, wd, []string{"fmt", "testdata/messy.yaml"})
	before := runIn(t, wd, []string{"check", "testdata/messy.yaml"})
	if r := runIn(t, wd, []string{"fmt", "--check", "testdata/messy.yaml"}); r.status != 1 || r.stdout != "testdata/messy.yaml\n" {
		t.Fatalf("--check before -w: exit %d, stdout %q", r.status, r.stdout)
	}
	if r := runIn(t, wd, []string{"fmt", "-w", "testdata/messy.yaml"}); r.status != 0 {
		t.Fatalf("-w: exit %d\n%s", r.status, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(wd, "testdata/messy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != printed.stdout {
		t.Errorf("after -w the file is\n%s\nwant what fmt printed\n%s", data, printed.stdout)
	}
	if r := runIn(t, wd, []string{"fmt", "--check", "testdata/messy.yaml"}); r.status != 0 || r.stdout != "" {
		t.Errorf("--check after -w: exit %d, stdout %q", r.status, r.stdout)
	}
	if after := runIn(t, wd, []string{"check", "testdata/messy.yaml"}); after.stdout != before.stdout || after.status != before.status {
		t.Errorf("check after fmt -w differs:\n%s\nbefore:\n%s", after.stdout, before.stdout)
	}
}
