package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"smith/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite .golden files in testdata")

// The CLI golden tests. Each testdata/NAME.args holds one smithc command
// line, one argument per line, without the program name: no quoting, no
// expansion, so any argument (spaces included) is written as is. Blank lines
// and lines starting with '#' are ignored.
//
// The command runs in process through run, in a scratch copy of the parts of
// the repository it may read, laid out as in the repository:
//
//	SCRATCH/cmd/smithc/        the working directory; holds a copy of this
//	                           package's testdata/ inputs (not .args, .golden)
//	SCRATCH/testdata/          copy of the repository's testdata/
//	SCRATCH/examples/          copy of the repository's examples/
//
// so "testdata/NAME.yaml" and "../../testdata/feature.json" name the same
// files as they do from this package, print as given, and nothing the
// command writes (build, dot -o) lands in the source tree.
//
// NAME.golden holds, in this order: the command, its exit status, its
// stdout, its stderr, and the files the command created in the scratch
// tree (relative to the working directory). Regenerate with
// go test ./cmd/smithc -run TestCLIGolden -update.

// cliResult is what one command did.
type cliResult struct {
	args     []string
	status   int
	stdout   string
	stderr   string
	newFiles []string
}

// String is the golden form of r.
func (r cliResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ smithc %s\n", strings.Join(r.args, " "))
	fmt.Fprintf(&b, "exit status %d\n", r.status)
	section := func(name, text string) {
		fmt.Fprintf(&b, "-- %s --\n", name)
		b.WriteString(text)
		if text != "" && !strings.HasSuffix(text, "\n") {
			b.WriteString("\n[no newline at end]\n")
		}
	}
	section("stdout", r.stdout)
	section("stderr", r.stderr)
	section("new files", strings.Join(r.newFiles, "\n")+strings.Repeat("\n", min(1, len(r.newFiles))))
	return b.String()
}

// readArgs reads a NAME.args file: one argument per line.
func readArgs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args = append(args, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return args
}

// copyTree copies the regular files under src into dst, skipping files for
// which skip(name) returns true and directories for which skip(name+"/")
// does.
func copyTree(t *testing.T, src, dst string, skip func(name string) bool) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if path != src && skip(d.Name()+"/") {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() || skip(d.Name()) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// scratch builds the scratch tree and returns the working directory in it.
func scratch(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	wd := filepath.Join(root, "cmd", "smithc")
	isCase := func(name string) bool {
		return strings.HasSuffix(name, ".args") || strings.HasSuffix(name, ".golden")
	}
	copyTree(t, "testdata", filepath.Join(wd, "testdata"), isCase)
	none := func(string) bool { return false }
	// The repository's testdata without the hostile documents of smithvm's
	// end-to-end tests and the agent CLIs' npm lock, which no case reads
	// (copying them made every case cost a fifth of a second).
	notSmithc := func(name string) bool { return name == "adversarial/" || name == "clis/" }
	copyTree(t, "../../testdata", filepath.Join(root, "testdata"), notSmithc)
	copyTree(t, "../../examples", filepath.Join(root, "examples"), none)
	return wd
}

// listFiles returns every regular file under root, relative to rel, with
// forward slashes, sorted.
func listFiles(t *testing.T, root, rel string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		r, err := filepath.Rel(rel, path)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(r))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// runIn runs smithc with args in the working directory wd (which must lie in
// a scratch tree whose root is two levels up) and records what it did.
// t.Chdir makes the caller's test non-parallel.
func runIn(t *testing.T, wd string, args []string) cliResult {
	t.Helper()
	root := filepath.Dir(filepath.Dir(wd))
	before := map[string]bool{}
	for _, f := range listFiles(t, root, wd) {
		before[f] = true
	}
	t.Chdir(wd)
	var stdout, stderr bytes.Buffer
	status := run(args, strings.NewReader(""), &stdout, &stderr)
	res := cliResult{args: args, status: status, stdout: stdout.String(), stderr: stderr.String()}
	for _, f := range listFiles(t, root, wd) {
		if !before[f] {
			res.newFiles = append(res.newFiles, f)
		}
	}
	return res
}

// golden compares got with the golden file at path, or rewrites it with
// -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	goldenfile.Check(t, path, []byte(got), *update, goldenfile.Regen(t, "cmd/smithc"))
}

// TestCLIGolden runs every testdata/NAME.args and compares the outcome with
// NAME.golden. The subtests are not parallel: each changes the working
// directory.
func TestCLIGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.args")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no testdata/*.args cases")
	}
	for _, path := range cases {
		stem, err := filepath.Abs(strings.TrimSuffix(path, ".args"))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(stem), func(t *testing.T) {
			args := readArgs(t, path)
			got := runIn(t, scratch(t), args)
			golden(t, stem+".golden", got.String())
		})
	}
}
