package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// crashEnv names the environment variable that turns the test binary into
// the child of TestCrashSafety; its value is BASE.
const crashEnv = "SMITH_STORE_CRASH_CHILD"

// TestMain runs the crash child instead of the tests when crashEnv is set.
func TestMain(m *testing.M) {
	if base := os.Getenv(lockEnv); base != "" {
		lockChild(base)
	}
	if base := os.Getenv(crashEnv); base != "" {
		if err := crashChild(base); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashState is the state of the crash test: Sum is 1+2+...+Seq.
type crashState struct {
	Seq int64 `json:"seq"`
	Sum int64 `json:"sum"`
}

// crashDelta is one step of the crash test.
type crashDelta struct {
	Seq int64 `json:"seq"`
}

// loadCrash opens run "crash" and loads it, checking that every delta
// continues the state.
func loadCrash(s *Store) (*Run, crashState, error) {
	r, err := s.Open("crash")
	if err != nil {
		return nil, crashState{}, err
	}
	var st crashState
	err = r.Load(&st, func(b []byte) error {
		var d crashDelta
		if err := json.Unmarshal(b, &d); err != nil {
			return err
		}
		if d.Seq != st.Seq+1 {
			return fmt.Errorf("delta seq %d on state seq %d", d.Seq, st.Seq)
		}
		st.Seq = d.Seq
		st.Sum += d.Seq
		return nil
	})
	if err != nil {
		r.Close()
		return nil, crashState{}, err
	}
	return r, st, nil
}

// crashChild loads run "crash" under base and checkpoints steps forever,
// printing "ready" and then the seq of every step once it is durable.
func crashChild(base string) error {
	s, err := New(base)
	if err != nil {
		return err
	}
	s.Policy = Policy{Every: 3, Interval: time.Hour}
	r, st, err := loadCrash(s)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	for {
		st.Seq++
		st.Sum += st.Seq
		if err := r.Checkpoint(crashDelta{Seq: st.Seq}, func() any { return st }, false); err != nil {
			return err
		}
		fmt.Println(st.Seq)
	}
}

// TestCrashSafety SIGKILLs a child that appends and snapshots in a loop at
// random instants; after every kill the run must load, consistent, with
// every step the child reported durable.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	s := newStore(t)
	r, err := s.Create("crash")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(crashState{}); err != nil {
		t.Fatal(err)
	}
	r.Close()

	var prev int64
	for round := range 20 {
		// One round in four kills the child at any instant from its start,
		// possibly inside Load; the others after it is ready.
		early := rand.IntN(4) == 0
		durable := runCrashChild(t, s.Base, early, time.Duration(rand.IntN(50))*time.Millisecond)
		r, st, err := loadCrash(s)
		if err != nil {
			t.Fatalf("round %d: Load after SIGKILL: %v", round, err)
		}
		r.Close()
		if st.Sum != st.Seq*(st.Seq+1)/2 {
			t.Fatalf("round %d: loaded state %+v, want sum %d", round, st, st.Seq*(st.Seq+1)/2)
		}
		if st.Seq < durable || st.Seq < prev {
			t.Fatalf("round %d: loaded seq %d, want at least %d (reported durable) and %d (previous round)", round, st.Seq, durable, prev)
		}
		t.Logf("round %d: durable %d loaded %d", round, durable, st.Seq)
		prev = st.Seq
	}
	if prev == 0 {
		t.Errorf("crash children made no progress: loaded seq 0")
	}
}

// runCrashChild starts the crash child, kills it with SIGKILL when d has
// passed since it was ready (since its start when early), and returns the
// last seq it reported durable.
func runCrashChild(t *testing.T, base string, early bool, d time.Duration) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+base)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	last := make(chan int64, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var n int64
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
		for ok && sc.Scan() {
			if v, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
				n = v
			}
		}
		last <- n
	}()
	if early {
		time.Sleep(d)
		cmd.Process.Kill()
		<-ready
		n := <-last
		cmd.Wait()
		return n
	}
	select {
	case ok := <-ready:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("crash child did not start: %s", stderr.String())
		}
	case <-time.After(30 * time.Second): // a bound, not an assertion on timing
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("crash child did not become ready: %s", stderr.String())
	}
	time.Sleep(d)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	n := <-last
	if err := cmd.Wait(); err == nil {
		t.Fatalf("crash child exited cleanly, want killed: %s", stderr.String())
	}
	return n
}
