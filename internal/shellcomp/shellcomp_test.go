package shellcomp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func testProgram() Program {
	run := pflag.NewFlagSet("prog run", pflag.ContinueOnError)
	run.String("base", "", "project root `DIR` (it's [BASE])")
	run.BoolP("verbose", "v", false, "stream output: live")
	schema := pflag.NewFlagSet("prog schema", pflag.ContinueOnError)
	return Program{Name: "my-prog", Global: []string{"--help", "--version"}, Commands: []Command{
		{Name: "run", Flags: run},
		{Name: "schema", Flags: schema, Words: []string{"workflow", "manifest"}},
	}}
}

// TestWrite: every script names every command and flag of the program, and
// an unknown shell is an error naming the known ones.
func TestWrite(t *testing.T) {
	t.Parallel()
	for _, shell := range Shells {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			if err := Write(&b, shell, testProgram()); err != nil {
				t.Fatalf("Write(%s) = %v", shell, err)
			}
			for _, want := range []string{"my-prog", "run", "schema", "base", "verbose", "workflow", "manifest"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("Write(%s) lacks %q:\n%s", shell, want, b.String())
				}
			}
		})
	}
	if err := Write(&strings.Builder{}, "tcsh", testProgram()); err == nil || !strings.Contains(err.Error(), "bash, zsh, fish") {
		t.Errorf("Write(tcsh) = %v, want an error naming bash, zsh, fish", err)
	}
}

// TestBashCompletes runs the bash script in bash (when installed): the
// words it offers after each prefix.
func TestBashCompletes(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	var b strings.Builder
	if err := Write(&b, "bash", testProgram()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		words []string // COMP_WORDS; the last is the word being completed
		want  string
	}{
		{"commands", []string{"my-prog", "s"}, "schema"},
		{"globals", []string{"my-prog", "--v"}, "--version"},
		{"flags", []string{"my-prog", "run", "--"}, "--base --verbose --help"},
		{"short", []string{"my-prog", "run", "-v"}, "-v"},
		{"words", []string{"my-prog", "schema", "m"}, "manifest"},
		{"unknown command", []string{"my-prog", "nope", "--"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			script := filepath.Join(t.TempDir(), "complete.bash")
			words := "'" + strings.Join(tt.words, "' '") + "'"
			body := b.String() + "COMP_WORDS=(" + words + ")\nCOMP_CWORD=" + strconv.Itoa(len(tt.words)-1) + "\n_my_prog\necho \"${COMPREPLY[*]}\"\n"
			if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bash, "--norc", "--noprofile", script).CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tt.want {
				t.Errorf("completing %v = %q, want %q", tt.words, got, tt.want)
			}
		})
	}
}
