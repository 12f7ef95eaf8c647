package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The script commands that read what a run left behind (TestScripts):
//
//	state ID PATH REGEXP
//	                  the value at PATH in RUN_ROOT/state.json of run ID
//	                  (keys and list indexes joined by dots, as
//	                  steps.Flaky.attempts) matches REGEXP: a string as it
//	                  is, anything else as JSON ("<missing>" when absent)
//	events ID [STEP WANT]
//	                  events.jsonl of run ID is well formed (eventProblems;
//	                  every event has a timestamp, run_id ID, a level and an
//	                  event; step_completed and step_failed a duration and
//	                  an exit_code),
//	                  and the events of STEP, as EVENT:ATTEMPT_ID:UID joined
//	                  by spaces, are WANT; UID numbers the attempt_uids of
//	                  the file in their order of appearance (0: none)
//	nosecret STRING [DIR]
//	                  no file under DIR (default .orchestrator) holds STRING
//	count FILE N      the counter file WORKSPACE/FILE has N lines (0 when
//	                  missing)
//	runs N            BASE/.orchestrator/runs holds N runs
//	gone PIDFILE      the process whose pid WORKSPACE/PIDFILE holds is gone
//	                  within 5s (else it is killed and the script fails)
//
// smithvm sets $RUNID to the run id of its "INFO: Run ID started" line,
// when it printed one.
var readCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"state":    cmdState,
	"events":   cmdEvents,
	"nosecret": cmdNoSecret,
	"count":    cmdCount,
	"runs":     cmdRuns,
	"gone":     cmdGone,
}

// startedRE finds the run id in smithvm's stderr.
var startedRE = regexp.MustCompile(`(?m)^INFO: Run (\S+) started \(workflow '`)

// setRunID sets $RUNID from the last smithvm's stderr.
func setRunID(ts *testscript.TestScript) {
	if m := startedRE.FindStringSubmatch(ts.ReadFile("stderr")); m != nil {
		ts.Setenv("RUNID", m[1])
	}
}

// runFile is the path of rel under RUN_ROOT of run id.
func runFile(ts *testscript.TestScript, id string, rel ...string) string {
	return filepath.Join(append([]string{ts.Getenv("WORK"), ".orchestrator", "runs", id}, rel...)...)
}

func cmdState(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: state ID PATH REGEXP")
	}
	data, err := os.ReadFile(runFile(ts, args[0], "state.json"))
	ts.Check(err)
	var v any
	ts.Check(json.Unmarshal(data, &v))
	got := "<missing>"
	for _, k := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				v = nil
			} else {
				v = x[i]
			}
		default:
			v = nil
		}
		if v == nil {
			break
		}
	}
	switch x := v.(type) {
	case nil:
	case string:
		got = x
	default:
		b, err := json.Marshal(x)
		ts.Check(err)
		got = string(b)
	}
	re, err := regexp.Compile(args[2])
	ts.Check(err)
	if re.MatchString(got) == neg {
		ts.Fatalf("state of run %s: %s = %q; want a match for %q: %v", args[0], args[1], got, args[2], !neg)
	}
}

func cmdEvents(ts *testscript.TestScript, neg bool, args []string) {
	if (len(args) != 1 && len(args) != 3) || neg {
		ts.Fatalf("usage: events ID [STEP WANT]")
	}
	var evs []event
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(runFile(ts, args[0], "logs", "events.jsonl"))), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			ts.Fatalf("events.jsonl line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	ps := eventProblems(evs)
	for i, ev := range evs {
		if ev.Timestamp == "" || ev.RunID != args[0] || ev.Level == "" || ev.Event == "" {
			ps = append(ps, fmt.Sprintf("events.jsonl line %d = %+v, want timestamp, run_id %s, level and event", i+1, ev, args[0]))
		}
		if (ev.Event == "step_completed" || ev.Event == "step_failed") && (ev.Duration == nil || ev.ExitCode == nil) {
			ps = append(ps, fmt.Sprintf("events.jsonl line %d = %+v, want duration and exit_code", i+1, ev))
		}
	}
	if len(ps) > 0 {
		ts.Fatalf("%s", strings.Join(ps, "\n"))
	}
	if len(args) == 1 {
		return
	}
	var got []string
	uids := map[string]int{"": 0} // attempt_uid -> its number in order of appearance
	for _, ev := range evs {
		if _, ok := uids[ev.AttemptUID]; !ok {
			uids[ev.AttemptUID] = len(uids)
		}
		if ev.Step == args[1] {
			got = append(got, fmt.Sprintf("%s:%d:%d", ev.Event, ev.AttemptID, uids[ev.AttemptUID]))
		}
	}
	if g := strings.Join(got, " "); g != args[2] {
		ts.Fatalf("events of %s (event:attempt_id:uid) = %s, want %s", args[1], g, args[2])
	}
}

func cmdNoSecret(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 || neg {
		ts.Fatalf("usage: nosecret STRING [DIR]")
	}
	dir := ".orchestrator"
	if len(args) == 2 {
		dir = args[1]
	}
	root := ts.MkAbs(dir)
	if _, err := os.Stat(root); err != nil {
		ts.Fatalf("nosecret: %v", err)
	}
	ts.Check(filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(args[0])) {
			ts.Fatalf("%s holds %q", path, args[0])
		}
		return nil
	}))
}

func cmdCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: count FILE N")
	}
	data, err := os.ReadFile(filepath.Join(ts.Getenv("WORK"), "workspace", args[0]))
	if err != nil && !os.IsNotExist(err) {
		ts.Fatalf("count: %v", err)
	}
	if got := strconv.Itoa(bytes.Count(data, []byte("\n"))); got != args[1] {
		ts.Fatalf("%s counts %s runs, want %s", args[0], got, args[1])
	}
}

func cmdRuns(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: runs N")
	}
	ents, err := os.ReadDir(filepath.Join(ts.Getenv("WORK"), ".orchestrator", "runs"))
	if err != nil && !os.IsNotExist(err) {
		ts.Fatalf("runs: %v", err)
	}
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	if strconv.Itoa(len(ids)) != args[0] {
		ts.Fatalf("runs = %v, want %s of them", ids, args[0])
	}
}

func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: gone PIDFILE")
	}
	file := filepath.Join(ts.Getenv("WORK"), "workspace", args[0])
	var pid int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no pid in %s: %v", args[0], err)
		}
	}
	if !gone(pid, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		ts.Fatalf("process %d (%s) still alive", pid, args[0])
	}
}
