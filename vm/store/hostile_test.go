package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"smith/source"
)

// TestCreateAfterStillbornRun: a run killed before anything of it was
// durable (its directory, lock and an empty or torn journal, no state.json)
// does not brick its id: Create takes it over; a run with a state still
// "already exists" (issue 8, point 3).
func TestCreateAfterStillbornRun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		journal string // "-" for none
		state   bool
		reuse   bool
	}{
		{"empty journal", "", false, true},
		{"no journal", "-", false, true},
		{"torn first line", `{"seq":1,"delta":{"se`, false, true},
		{"a durable delta", "{\"seq\":1,\"delta\":{}}\n", false, false},
		{"a state", "", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			r, err := s.Create("x")
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			j := filepath.Join(r.Root(), journalFile)
			if tt.journal == "-" {
				os.Remove(j)
			} else if err := os.WriteFile(j, []byte(tt.journal), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.state {
				os.WriteFile(filepath.Join(r.Root(), stateFile), []byte(`{"journal_seq":0}`), 0o644)
			}
			r2, err := s.Create("x")
			if !tt.reuse {
				if codeOf(err) != source.EUsage {
					t.Fatalf("Create over a run with a state: %v, want already exists", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Create over a stillborn run: %v", err)
			}
			defer r2.Close()
			if err := r2.AppendJournal(map[string]int{"a": 1}); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, j); got != "{\"seq\":1,\"delta\":{\"a\":1}}\n" {
				t.Errorf("journal after reuse = %q", got)
			}
		})
	}
}

// TestNeverWriteUnreadableState: a snapshot or a journal entry nested too
// deep to be read back is refused with E_LIMIT, and the last good state stays
// (issue 8, point 6).
func TestNeverWriteUnreadableState(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("deep")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.WriteSnapshot(map[string]any{"ok": 1}); err != nil {
		t.Fatal(err)
	}
	good := readFile(t, filepath.Join(r.Root(), stateFile))
	var deep any = 1
	for i := 0; i < 10001; i++ {
		deep = []any{deep}
	}
	if err := r.WriteSnapshot(map[string]any{"v": deep}); codeOf(err) != source.ELimit {
		t.Errorf("WriteSnapshot(10001 deep) = %v, want E_LIMIT", err)
	}
	if err := r.AppendJournal(map[string]any{"v": deep}); codeOf(err) != source.ELimit {
		t.Errorf("AppendJournal(10001 deep) = %v, want E_LIMIT", err)
	}
	if got := readFile(t, filepath.Join(r.Root(), stateFile)); got != good {
		t.Errorf("state.json changed to %.80q", got)
	}
	r.Close()
	r2, err := s.Open("deep")
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	var st map[string]any
	if err := r2.Load(&st, func([]byte) error { return nil }); err != nil {
		t.Errorf("Load after the refused writes: %v", err)
	}
}

// lockEnv turns the test binary into a process that holds the lock of run
// "lk" under BASE (its value) until it is killed.
const lockEnv = "SMITH_STORE_LOCK_CHILD"

func lockChild(base string) {
	s, err := New(base)
	if err == nil {
		var r *Run
		if r, err = s.Open("lk"); err == nil {
			fmt.Println("locked")
			time.Sleep(time.Minute)
			r.Close()
		}
	}
	fmt.Fprintln(os.Stderr, "lock child:", err)
	os.Exit(1)
}

// TestOpenRightAfterHolderKilled: a run whose driver was just SIGKILLed
// opens at once: the lock of a dead holder is waited for, not refused with
// E_RUN_LOCKED (issue 8, point 10). The lock fd is close-on-exec, so no
// child of the driver holds it.
func TestOpenRightAfterHolderKilled(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("lk")
	if err != nil {
		t.Fatal(err)
	}
	if flags, err := unixFcntlGetfd(r.lock); err != nil || flags&syscall.FD_CLOEXEC == 0 {
		t.Errorf("lock fd flags %#x (%v): not close-on-exec", flags, err)
	}
	if err := r.WriteSnapshot(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	for i := 0; i < 10; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), lockEnv+"="+s.Base)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "locked\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("lock child said %q", line)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		r, err := s.Open("lk")
		cmd.Wait()
		if err != nil {
			t.Fatalf("trial %d: Open right after the holder's SIGKILL: %v", i, err)
		}
		r.Close()
	}
}

// unixFcntlGetfd returns the descriptor flags of f.
func unixFcntlGetfd(f *os.File) (int, error) {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFD, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(flags), nil
}

// FuzzStoreLoad: whatever state.json and journal hold, Load never panics,
// fails only with E_STATE_CORRUPT, and never changes state.json (a state it
// could not read is never rewritten).
func FuzzStoreLoad(f *testing.F) {
	f.Add([]byte(`{"a":1,"journal_seq":1}`), []byte("{\"seq\":2,\"delta\":{\"b\":2}}\n"))
	f.Add([]byte(`{}`), []byte(""))
	f.Add([]byte(`[]`), []byte("{\"seq\":1,\"delta\":{}}\n{\"seq\":3"))
	f.Add([]byte(`{"journal_seq":-1}`), []byte("not json\n"))
	f.Add([]byte(``), []byte("{\"seq\":1,\"delta\":{}}\n{\"seq\":2,\"delta\":{}}\n"))
	f.Fuzz(func(t *testing.T, state, journal []byte) {
		s := newStore(t)
		r, err := s.Create("f")
		if err != nil {
			t.Fatal(err)
		}
		root := r.Root()
		r.Close()
		if len(state) > 0 {
			os.WriteFile(filepath.Join(root, stateFile), state, 0o644)
		}
		os.WriteFile(filepath.Join(root, journalFile), journal, 0o644)
		r, err = s.Open("f")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var st map[string]any
		err = r.Load(&st, func(d []byte) error {
			var v map[string]any
			return json.Unmarshal(d, &v)
		})
		if err != nil && codeOf(err) != source.EStateCorrupt {
			t.Errorf("Load: %v, want nil or E_STATE_CORRUPT", err)
		}
		if len(state) > 0 {
			if got := readFile(t, filepath.Join(root, stateFile)); got != string(state) {
				t.Errorf("Load changed state.json")
			}
		}
	})
}

// TestOpenWithoutStateWritesNothing: Open of a run folder with no state
// (none at all, or a torn journal line only) is refused, E_STATE_CORRUPT,
// and leaves the folder byte for byte as it was: no logs/, journal or lock
// (finding 3 of the run-lifecycle audit).
func TestOpenWithoutStateWritesNothing(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]map[string]string{
		"empty folder":      {},
		"torn journal only": {"journal.jsonl": "{\"seq\":1,"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			root := filepath.Join(s.RunsDir(), "r")
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			for f, text := range files {
				if err := os.WriteFile(filepath.Join(root, f), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, root)
			r, err := s.Open("r")
			if err == nil {
				r.Close()
			}
			if codeOf(err) != source.EStateCorrupt || !strings.Contains(err.Error(), "run has no state") {
				t.Errorf("Open = %v, want E_STATE_CORRUPT run has no state", err)
			}
			if after := tree(t, root); after != before {
				t.Errorf("a refused Open wrote in the run folder:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// tree lists the files under dir with their contents.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel)
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString("=" + strconv.Quote(string(data)))
		}
		b.WriteString(" ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
