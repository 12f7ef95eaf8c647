package main

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"smith/internal/goldenfile"
	"smith/internal/refusalscan"
	"smith/internal/shellcomp"
	"smith/source"
)

// These tests state properties that the goldens only record. None of them
// is parallel: runIn changes the working directory.

// TestBuildThenDisasm builds each input (to the default output name and
// with -o) and checks that disassembling the .smbc prints exactly what
// disassembling the source prints.
func TestBuildThenDisasm(t *testing.T) {
	tests := []struct {
		name string
		src  string
		flag []string // build flags before FILE
		smbc string   // the file build must write
	}{
		{"yaml default name", "testdata/clean.yaml", nil, "testdata/clean.smbc"},
		{"yaml with warnings", "testdata/warn.yaml", nil, "testdata/warn.smbc"},
		{"manifest -o", "../../testdata/feature.json", []string{"-o", "feature.smbc"}, "feature.smbc"},
		{"manifest --output", "../../testdata/feature.json", []string{"--output", "out.bin.smbc"}, "out.bin.smbc"},
		{"repository workflow", "../../testdata/constructs.yaml", nil, "../../testdata/constructs.smbc"},
		{"example", "../../examples/demo/demo.yaml", []string{"-o", "demo.smbc"}, "demo.smbc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wd := scratch(t)
			build := runIn(t, wd, append(append([]string{"build"}, tt.flag...), tt.src))
			if build.status != 0 {
				t.Fatalf("smithc build %s: exit status %d, stderr:\n%s", tt.src, build.status, build.stderr)
			}
			if build.stdout != "" {
				t.Errorf("smithc build %s: stdout = %q, want nothing", tt.src, build.stdout)
			}
			if !slices.Contains(build.newFiles, tt.smbc) {
				t.Fatalf("smithc build %s wrote %q, want %s", tt.src, build.newFiles, tt.smbc)
			}
			fromSrc := runIn(t, wd, []string{"disasm", tt.src})
			fromBin := runIn(t, wd, []string{"disasm", tt.smbc})
			if fromSrc.status != 0 || fromBin.status != 0 {
				t.Fatalf("smithc disasm: exit status %d (source), %d (.smbc); stderr:\n%s%s", fromSrc.status, fromBin.status, fromSrc.stderr, fromBin.stderr)
			}
			if fromSrc.stdout == "" {
				t.Fatalf("smithc disasm %s printed nothing", tt.src)
			}
			if d := goldenfile.FirstDiff(fromBin.stdout, fromSrc.stdout); d != "" {
				t.Errorf("disasm %s differs from disasm %s at %s", tt.smbc, tt.src, d)
			}
			if fromBin.stderr != "" {
				t.Errorf("smithc disasm %s: stderr = %q, want nothing (warnings belong to the source)", tt.smbc, fromBin.stderr)
			}
			// check verifies a program file as run would load it.
			if c := runIn(t, wd, []string{"check", tt.smbc}); c.status != 0 || c.stdout != "" {
				t.Errorf("smithc check %s: exit status %d, stdout %q; want 0 and no diagnostics", tt.smbc, c.status, c.stdout)
			}
		})
	}
}

// TestHelp checks that --help and -h of every command print the help on
// stdout, nothing on stderr, and exit 0.
func TestHelp(t *testing.T) {
	wd := scratch(t)
	for _, cmd := range program().Names() {
		for _, flag := range []string{"--help", "-h"} {
			t.Run(cmd+flag, func(t *testing.T) {
				r := runIn(t, wd, []string{cmd, flag})
				if r.status != 0 {
					t.Errorf("smithc %s %s: exit status %d, want 0", cmd, flag, r.status)
				}
				if !strings.HasPrefix(r.stdout, "Usage: smithc "+cmd) {
					t.Errorf("smithc %s %s: stdout = %q, want the usage", cmd, flag, r.stdout)
				}
				if r.stderr != "" {
					t.Errorf("smithc %s %s: stderr = %.80q..., want nothing", cmd, flag, r.stderr)
				}
			})
		}
	}
}

// TestVersion: --version prints "smithc VERSION" on one line and exits 0.
func TestVersion(t *testing.T) {
	wd := scratch(t)
	r := runIn(t, wd, []string{"--version"})
	if r.status != 0 || r.stderr != "" || !regexp.MustCompile(`^smithc \S+\n$`).MatchString(r.stdout) {
		t.Errorf("smithc --version = exit %d, stdout %q, stderr %q; want 0, one line smithc VERSION, nothing", r.status, r.stdout, r.stderr)
	}
}

// TestCompletionNamesEveryFlag: each shell's script names every command
// and every long flag of smithc (they come from the same flag sets).
func TestCompletionNamesEveryFlag(t *testing.T) {
	wd := scratch(t)
	for _, shell := range shellcomp.Shells {
		r := runIn(t, wd, []string{"completion", shell})
		if r.status != 0 {
			t.Fatalf("smithc completion %s: exit %d: %s", shell, r.status, r.stderr)
		}
		for _, c := range commands() {
			fs := c.Flags(&flagVals{}, io.Discard)
			if name := strings.TrimPrefix(fs.Name(), "smithc "); !strings.Contains(r.stdout, name) {
				t.Errorf("smithc completion %s lacks the command %s", shell, name)
			}
			fs.VisitAll(func(f *pflag.Flag) {
				if !strings.Contains(r.stdout, f.Name) {
					t.Errorf("smithc completion %s lacks --%s of %s", shell, f.Name, fs.Name())
				}
			})
		}
	}
}

// TestExamplesFormatted: every YAML workflow shipped under examples/ is in
// the canonical form of smithc fmt (smithc fmt --check passes).
func TestExamplesFormatted(t *testing.T) {
	wd := scratch(t)
	var files []string
	filepath.WalkDir(filepath.Join(wd, "../../examples"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			rel, _ := filepath.Rel(wd, p)
			files = append(files, rel)
		}
		return nil
	})
	if len(files) < 5 {
		t.Fatalf("only %d examples found", len(files))
	}
	r := runIn(t, wd, append([]string{"fmt", "--check"}, files...))
	if r.status != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("smithc fmt --check examples: exit %d; not formatted (run smithc fmt -w on them):\n%s%s", r.status, r.stdout, r.stderr)
	}
}

// TestCheckReportsEverything checks that one run of check on a document
// with many different problems reports every one of them.
func TestCheckReportsEverything(t *testing.T) {
	wd := scratch(t)
	r := runIn(t, wd, []string{"check", "--json", "testdata/many.yaml"})
	var got []struct {
		Line int         `json:"line"`
		Code source.Code `json:"code"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("smithc check --json: %v\n%s", err, r.stdout)
	}
	want := []struct {
		line int
		code source.Code
	}{
		{8, source.EStrictFlow},
		{9, source.EVarMissing},
		{9, source.EEnvNotAllowed},
		{10, source.EPathEscape},
		{11, source.EUnknownTarget},
		{12, source.EDupStep},
		{13, source.EUnknownProv},
		{15, source.EUnknownSchema},
		{18, source.EVarMissing},
		{19, source.ESchema},
		{21, source.WUnreachable},
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(d struct {
			Line int         `json:"line"`
			Code source.Code `json:"code"`
		}) bool {
			return d.Line == w.line && d.Code == w.code
		}) {
			t.Errorf("smithc check testdata/many.yaml: no %s at line %d; got:\n%s", w.code, w.line, r.stdout)
		}
	}
	codes := map[source.Code]bool{}
	for _, d := range got {
		codes[d.Code] = true
	}
	if len(codes) < 10 {
		t.Errorf("smithc check testdata/many.yaml reported %d different codes, want at least 10", len(codes))
	}
	if r.status == 0 {
		t.Errorf("smithc check testdata/many.yaml: exit status 0, want non-zero")
	}
}

// TestUsageErrorsOneForm: every usage refusal of every command has the one
// form "smithc COMMAND: E_USAGE: message" (shellcomp.Refuse): an unknown
// flag and a wrong number of arguments of each command of the table, an
// unknown command, and, in the source, no message that names E_USAGE is
// printed by another function.
func TestUsageErrorsOneForm(t *testing.T) {
	dir := t.TempDir()
	check := func(args []string, name string, mustRefuse bool) {
		t.Helper()
		var out, errb bytes.Buffer
		st := run(args, strings.NewReader(""), &out, &errb)
		form := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `: E_USAGE: \S`)
		seen := false
		for _, line := range strings.Split(errb.String(), "\n") {
			if strings.Contains(line, "E_USAGE") {
				seen = true
				if !form.MatchString(line) {
					t.Errorf("smithc %s: usage refusal %q is not in the form %q", strings.Join(args, " "), line, name+": E_USAGE: ...")
				}
			}
		}
		if mustRefuse && (!seen || st != 2) {
			t.Errorf("smithc %s = exit %d, stderr %q; want exit 2 and %q", strings.Join(args, " "), st, errb.String(), name+": E_USAGE: ...")
		}
	}
	prog := filepath.Join(dir, "p.smbc")
	if err := os.WriteFile(prog, []byte("SMBC"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range program().Commands {
		name := "smithc " + c.Name
		check([]string{c.Name, "--no-such-flag"}, name, true)
		variadic := c.Name == "check" || c.Name == "fmt" // FILE...
		check([]string{c.Name, "x1", "x2", "x3", "x4", "x5"}, name, !variadic)
		if variadic {
			check([]string{c.Name}, name, true)
		}
	}
	check([]string{"build", prog}, "smithc build", true)
	check([]string{"fmt", prog, filepath.Join(dir, "m.json")}, "smithc fmt", true)
	check([]string{"nosuchcommand"}, "smithc", true)

	// The source: a message that names E_USAGE is printed by
	// shellcomp.Refuse.
	stray, err := refusalscan.Stray(".", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stray {
		t.Errorf("%s, not by shellcomp.Refuse", s)
	}
}
