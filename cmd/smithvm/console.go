package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"smith/vm"
)

// console writes the contract's event lines to stderr and, only when stderr
// is a terminal, a live progress line (step i of n, elapsed) beneath them.
type console struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	total    int
	started  int             // distinct steps started: i of "step i of n"
	seen     map[string]bool // the steps started so far
	step     string
	begin    time.Time
	drawn    bool
	stop     chan struct{}
	stopOnce sync.Once
	lastLine string // the current step's last line of output (progress.go)
	partial  string // its output after that line
}

func newConsole(w io.Writer, total int) *console {
	c := &console{w: w, total: total, begin: time.Now(), stop: make(chan struct{}), seen: map[string]bool{}}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		c.tty = true
		go c.tick()
	}
	return c
}

// tick redraws the progress line every half second.
func (c *console) tick() {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			if c.step != "" {
				c.draw()
			}
			c.mu.Unlock()
		}
	}
}

func (c *console) draw() {
	head := fmt.Sprintf("[step %d of %d] %s %.1fs", c.started, c.total, c.step, time.Since(c.begin).Seconds())
	if c.lastLine != "" {
		head += " | " + c.lastLine
	}
	fmt.Fprint(c.w, "\r\033[K"+fit(head, c.width()-1))
	c.drawn = true
}

func (c *console) clear() {
	if c.drawn {
		fmt.Fprint(c.w, "\r\033[K")
		c.drawn = false
	}
}

// event prints one event's console line.
func (c *console) event(ev vm.Event) {
	line := ev.Console()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
	if line != "" {
		fmt.Fprintln(c.w, line)
	}
	if !c.tty {
		return
	}
	switch ev.Kind {
	case vm.EvStepStarted:
		// A loop's body starts once per iteration: count each step once,
		// so that i never passes n.
		if !c.seen[ev.Step] {
			c.seen[ev.Step] = true
			c.started++
		}
		c.step = ev.Step
		c.lastLine, c.partial = "", ""
		c.draw()
	case vm.EvRunCompleted, vm.EvRunFailed, vm.EvRunHalted, vm.EvRunInterrupted:
		c.step = ""
	}
}

// line prints a line of our own.
func (c *console) line(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
	fmt.Fprintln(c.w, s)
}

// live is where -v streams step output (the VM masks it first).
func (c *console) live() io.Writer { return liveWriter{c} }

type liveWriter struct{ c *console }

func (l liveWriter) Write(p []byte) (int, error) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.c.clear()
	if _, err := l.c.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *console) close() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.mu.Lock()
	c.clear()
	c.mu.Unlock()
}

// gitignoreCheck: on the first run in a BASE inside a git work tree whose
// .gitignore does not list .orchestrator/, ask once on a terminal, otherwise
// print one INFO hint; outside git, nothing (CONTRACT 2). .gitignore is
// never edited without a yes. It reports whether this is the first run in
// BASE.
func (e *env) gitignoreCheck(p *project) bool {
	orch := p.base + "/.orchestrator"
	if _, err := os.Stat(orch); err == nil {
		return false
	}
	if !inGitWorkTree(p.base) {
		return true
	}
	path := p.base + "/.gitignore"
	data, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(data), "\n") {
		switch strings.TrimSpace(l) {
		case ".orchestrator", ".orchestrator/", "/.orchestrator", "/.orchestrator/", ".orchestrator/*":
			return true
		}
	}
	in, inOK := e.stdin.(*os.File)
	errf, errOK := e.stderr.(*os.File)
	if inOK && errOK && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(errf.Fd())) {
		fmt.Fprint(e.stderr, "Add .orchestrator/ (run state and logs) to .gitignore? [y/N] ")
		var answer string
		fmt.Fscanln(in, &answer)
		if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
			add := ".orchestrator/\n"
			if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
				add = "\n" + add
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err == nil {
				_, err = f.WriteString(add)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "WARNING: cannot update .gitignore: %v\n", err)
			} else {
				fmt.Fprintln(e.stderr, "INFO: Added .orchestrator/ to .gitignore.")
			}
		}
		return true
	}
	fmt.Fprintln(e.stderr, "INFO: .gitignore does not list .orchestrator/ (run state and logs); add it to keep runs out of git.")
	return true
}

// inGitWorkTree reports whether dir or one of its parents holds a .git (a
// repository's folder, or the file of a linked worktree or submodule): the
// test git itself makes, without starting git.
func inGitWorkTree(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}
