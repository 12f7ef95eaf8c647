package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// The step host: one child of the worker (`smith-temporal step-host`)
// that runs every step that starts a process, so a step pays for no
// process start of its own besides its command's. It has the guarantee
// the child per step had: it gets SIGTERM when the worker dies (even by
// SIGKILL: Pdeathsig) and sees its input close; it then cancels every
// step, which kills each step's process group, and exits.

// A hostMsg is one line from the worker to the step host: a step to run
// (Req set) or a step to cancel.
type hostMsg struct {
	ID     int
	Cancel bool         `json:",omitempty"`
	Req    *WireRequest `json:",omitempty"`
}

// A hostReply is one line from the step host: the result of step ID.
type hostReply struct {
	ID     int
	Result WireResult
}

// ServeSteps is the step host's main loop: it reads hostMsgs from in,
// runs each step in base (RunStep) at once, in its own goroutine, and
// writes each result to out as it ends. When ctx ends or in closes, it
// cancels the running steps and returns once they have ended.
func ServeSteps(ctx context.Context, base string, in io.Reader, out io.Writer, lookup func(string) (string, bool)) error {
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()    // every step still running is cancelled (its group killed),
		wg.Wait() // and has ended before the host exits
	}()
	if c, ok := in.(io.Closer); ok {
		// Cancelled (SIGTERM) with the input still open: stop reading.
		defer context.AfterFunc(ctx, func() { c.Close() })()
	}
	var mu sync.Mutex // out, cancels
	enc := json.NewEncoder(out)
	cancels := map[int]context.CancelFunc{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		var m hostMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("step host: %v", err)
		}
		mu.Lock()
		if m.Cancel {
			if c := cancels[m.ID]; c != nil {
				c()
			}
			mu.Unlock()
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		cancels[m.ID] = cancel
		mu.Unlock()
		if m.Req == nil {
			cancel()
			return fmt.Errorf("step host: message %d has no request", m.ID)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := RunStep(sctx, base, *m.Req, lookup)
			mu.Lock()
			defer mu.Unlock()
			delete(cancels, m.ID)
			cancel()
			enc.Encode(hostReply{ID: m.ID, Result: res})
		}()
	}
	if ctx.Err() != nil {
		return nil // cancelled: the deferred wait lets every step end
	}
	return sc.Err() // the worker closed our input (or died): the deferred stop cancels every step
}

// stepHost is the worker's side: the child, started at the first step
// that needs it and again after it died.
type stepHost struct {
	exe, base string

	mu      sync.Mutex
	in      io.WriteCloser // nil: no child running
	pending map[int]chan WireResult
	next    int
	gone    chan struct{} // closed when the current child has exited
}

// errHostDied fails the steps of a step host that died: their activities
// fail and Temporal runs them again.
var errHostDied = errors.New("the step host exited")

// start starts the child; s.mu is held.
func (s *stepHost) start() error {
	cmd := exec.Command(s.exe, "step-host", "--base", s.base)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Env = os.Environ()
	started := make(chan error, 1)
	gone := make(chan struct{})
	go func() {
		// Pdeathsig follows the thread that started the child: that
		// thread stays locked to this goroutine for the child's life.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(gone)
	}()
	if err := <-started; err != nil {
		return err
	}
	s.in, s.gone = in, gone
	if s.pending == nil {
		s.pending = map[int]chan WireResult{}
	}
	go s.read(out, in, gone)
	return nil
}

// read delivers the child's results until it exits; then every step
// still pending fails.
func (s *stepHost) read(out io.Reader, in io.WriteCloser, gone chan struct{}) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		var r hostReply
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		s.mu.Lock()
		if ch := s.pending[r.ID]; ch != nil {
			ch <- r.Result
			delete(s.pending, r.ID)
		}
		s.mu.Unlock()
	}
	<-gone
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.in == in {
		s.in = nil
		for id, ch := range s.pending {
			close(ch)
			delete(s.pending, id)
		}
	}
}

// send writes one message to the child; s.mu is held.
func (s *stepHost) send(m hostMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = s.in.Write(append(b, '\n'))
	return err
}

// run runs wr in the step host. When ctx ends first, the step is
// cancelled (its process group killed) and ctx's error returned once it
// has ended (at most 15 s later).
func (s *stepHost) run(ctx context.Context, wr WireRequest) (WireResult, error) {
	s.mu.Lock()
	if s.in == nil {
		if err := s.start(); err != nil {
			s.mu.Unlock()
			return WireResult{}, fmt.Errorf("start the step host: %w", err)
		}
	}
	s.next++
	id := s.next
	ch := make(chan WireResult, 1)
	s.pending[id] = ch
	err := s.send(hostMsg{ID: id, Req: &wr})
	s.mu.Unlock()
	if err != nil {
		return WireResult{}, fmt.Errorf("step host: %w", err)
	}
	select {
	case res, ok := <-ch:
		if !ok {
			return WireResult{}, errHostDied
		}
		return res, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if s.in != nil {
		s.send(hostMsg{ID: id, Cancel: true})
	}
	s.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
	}
	return WireResult{}, ctx.Err()
}
