package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// adversarialDir holds the adversarial corpus: one folder per case with a
// flow.yaml or flow.json, a case.txt of directives, and files to copy
// (workspace/...). case.txt lines:
//
//	exit N              the expected exit status
//	code E_X            a code the stderr must name ("-" for none)
//	env K=V             set for smithvm
//	secret VALUE        VALUE appears in no file under BASE and in no output
//	symlink LINK TARGET create BASE/LINK -> BASE/TARGET (or TARGET when absolute)
//	long                only with -long (or SMITH_LONG=1)
//
// Every case also checks: no panic, nothing written in BASE/outside, no
// process of the run left.
const adversarialDir = "../../../testdata/adversarial"

// An advCase is one parsed case.txt.
type advCase struct {
	exit     int
	codes    []string
	env      []string
	secrets  []string
	symlinks [][2]string
	long     bool
}

func parseCase(t *testing.T, path string) advCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := advCase{exit: -1}
	for _, line := range strings.Split(string(b), "\n") {
		key, val, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch key {
		case "", "#":
		case "exit":
			if val == "?" { // to be recorded
				c.exit = -2
				continue
			}
			c.exit, err = strconv.Atoi(val)
			if err != nil {
				t.Fatalf("%s: exit %q", path, val)
			}
		case "code":
			if val != "-" && val != "?" {
				c.codes = append(c.codes, val)
			}
		case "env":
			c.env = append(c.env, val)
		case "secret":
			c.secrets = append(c.secrets, val)
		case "symlink":
			l, tgt, _ := strings.Cut(val, " ")
			c.symlinks = append(c.symlinks, [2]string{l, tgt})
		case "long":
			c.long = true
		default:
			t.Fatalf("%s: unknown directive %q", path, key)
		}
	}
	if c.exit == -1 {
		t.Fatalf("%s: no exit directive", path)
	}
	return c
}

// snapshot lists the files under dir with their sizes.
func snapshot(dir string) string {
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			fi, _ := d.Info()
			if fi != nil {
				out = append(out, path+" "+strconv.FormatInt(fi.Size(), 10))
			}
		}
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestAdversarial runs every case of testdata/adversarial.
func TestAdversarial(t *testing.T) {
	t.Parallel()
	ents, err := os.ReadDir(adversarialDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		n++
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(adversarialDir, name)
			c := parseCase(t, filepath.Join(src, "case.txt"))
			if c.long && !isLong() {
				t.Skip("long case: run with -long or SMITH_LONG=1")
			}
			p := newProj(t)
			p.write("outside/secret.txt", "OUTSIDE-SECRET\n")
			flow := ""
			filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				rel, _ := filepath.Rel(src, path)
				if rel == "case.txt" {
					return nil
				}
				b, _ := os.ReadFile(path)
				p.write(rel, string(b))
				if strings.HasPrefix(rel, "flow.") {
					flow = filepath.Join(p.base, rel)
				}
				return nil
			})
			if flow == "" {
				t.Fatalf("case %s has no flow.yaml or flow.json", name)
			}
			for _, l := range c.symlinks {
				link := filepath.Join(p.base, l[0])
				target := l[1]
				if !filepath.IsAbs(target) {
					target = filepath.Join(p.base, target)
				}
				os.MkdirAll(filepath.Dir(link), 0o755)
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
			}
			outside := snapshot(filepath.Join(p.base, "outside"))
			r := p.vmEnv(baseEnv(c.env...), "run", flow, "--run-id", "adv", "--json")
			if c.exit == -2 {
				code := "-"
				if i := strings.Index(r.stderr, "E_"); i >= 0 {
					code = strings.FieldsFunc(r.stderr[i:], func(r rune) bool { return !(r == '_' || r >= 'A' && r <= 'Z') })[0]
				}
				t.Errorf("RECORD %s %d %s | %s", name, r.code, code, strings.ReplaceAll(clip(r.stderr), "\n", " / "))
			} else if r.code != c.exit {
				t.Errorf("exit %d, want %d\nstderr:\n%s", r.code, c.exit, clip(r.stderr))
			}
			for _, code := range c.codes {
				if !strings.Contains(r.stderr, code) {
					t.Errorf("stderr lacks %s:\n%s", code, clip(r.stderr))
				}
			}
			if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
				t.Errorf("smithvm panicked:\n%s", clip(r.stderr))
			}
			if got := snapshot(filepath.Join(p.base, "outside")); got != outside {
				t.Errorf("BASE/outside changed:\n%s\nwas\n%s", got, outside)
			}
			for _, s := range c.secrets {
				if strings.Contains(r.stdout, s) || strings.Contains(r.stderr, s) {
					t.Errorf("the secret is in smithvm's output")
				}
				noSecretUnder(t, p.base, s)
			}
			if _, err := os.Stat(p.runRoot("adv")); err == nil {
				if s := p.vm("status", "adv"); s.code != 0 {
					t.Errorf("the state does not load: exit %d\n%s", s.code, s.stderr)
				}
			}
			for _, pid := range orphans(p.ws) {
				if !gone(pid, 3*time.Second) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("process %d of the run outlived it", pid)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no adversarial cases")
	}
}
