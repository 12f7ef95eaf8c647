package vm_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"smith/compiler"
	"smith/vm"
	"smith/workers/step"
)

// TestYAMLGolden compiles testdata/yaml/NAME.yaml with the real compiler,
// runs it with the workers' results scripted by NAME.script, and compares
// the events and the final state with NAME.events.golden and
// NAME.state.golden.
//
// A script line is `STEP RESULT [OUTPUT...]`: RESULT is an exit code (0 is
// SIGNAL:SUCCESS, 124 SIGNAL:TIMEOUT, anything else SIGNAL:FAILURE) or a
// signal (SIGNAL:X); the rest of the line is the step's output. Each line is
// one execution of STEP, consumed in order. '#' starts a comment.
func TestYAMLGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/yaml/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/yaml/*.yaml inputs")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			res, ds := compiler.Compile(file, src, compiler.Options{})
			if res.Prog == nil {
				t.Fatalf("Compile(%s) failed:\n%s", file, ds.Error())
			}
			script := readScript(t, strings.TrimSuffix(file, ".yaml")+".script")
			r := run(t, res.Prog, &fake{script: script}, nil)
			var ev bytes.Buffer
			for _, e := range r.events {
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				ev.Write(b)
				ev.WriteByte('\n')
			}
			golden(t, "yaml/"+name+".events.golden", ev.Bytes())
			st := jsonOf(t, r.st)
			st = strings.ReplaceAll(st, r.st.ProgramHash, "HASH")
			if r.err != nil {
				st += "\nerror: " + r.err.Error()
			}
			golden(t, "yaml/"+name+".state.golden", []byte(st+"\n"))
			checkRebuilt(t, r)
		})
	}
}

func readScript(t *testing.T, path string) map[string][]step.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]step.Result{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 2 {
			t.Fatalf("%s:%d: want STEP RESULT [OUTPUT]", path, n)
		}
		r := step.Result{Attempts: 1, Duration: 250 * time.Millisecond}
		if code, err := strconv.Atoi(fields[1]); err == nil {
			r.ExitCode = code
			switch code {
			case 0:
				r.Signal = vm.SigSuccess
			case 124:
				r.Signal = vm.SigTimeout
			default:
				r.Signal = vm.SigFailure
			}
		} else {
			r.Signal = fields[1]
		}
		if len(fields) == 3 {
			r.Output = fields[2]
			r.Lines = strings.Split(fields[2], " ")
		}
		out[fields[0]] = append(out[fields[0]], r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
