// Command helper is the test program that the end-to-end tests of smithvm
// run as a workflow step. Its arguments are operations, run in order:
//
//	echo:TEXT        print TEXT and a newline on stdout
//	err:TEXT         print TEXT and a newline on stderr
//	count:FILE       append one line to FILE (how many times a step ran)
//	pid:FILE         write the process id to FILE
//	once:FILE        if FILE exists, stop here (exit 0); else create it
//	sleep:SECS       sleep
//	sleepfile:FILE   sleep the seconds written in FILE (none when it is missing)
//	excl:FILE:SECS   create FILE (exit 3 if it exists: another step holds it), sleep, remove it
//	wait:FILE        wait until FILE exists (at most 30 s, then exit 99)
//	bytes:N          print N bytes: lines of 99 'x' and a newline
//	seq:N            print the numbers 1 to N, one a line (as seq N)
//	jsonbytes:N      print a JSON array of at least N bytes: strings of 96
//	                 'x', one a line, then "end"
//	env              print the environment, one NAME=VALUE a line, sorted
//	printenv:NAME    print the value of NAME on stdout
//	errenv:NAME      print the value of NAME on stderr
//	checkenv:NAME:V  exit 7 unless NAME is set to V
//	flaky:FILE:N     append to FILE; exit 1 while FILE has at most N lines
//	ne:A:B           exit 1 if A equals B
//	child:FILE:SECS  start a grandchild that writes its pid to FILE and sleeps
//	symlink:T:L      create the symlink L -> T (and L's parent directories)
//	rm:PATH          remove PATH and everything below it
//	write:PATH:TEXT  write TEXT to PATH (relative to the cwd), creating folders
//	exit:K           exit with status K
//	cat              copy stdin to stdout
//	ignoreterm       ignore SIGTERM (and SIGINT) from here on
//	sigparent:SIG    send SIG (INT, TERM or HUP) to the parent process
//	                 (smithvm), as Ctrl-C, kill or a closed terminal would
//	daemon:FILE:SECS start a double-forked grandchild (its own session, no
//	                 parent left) that writes its pid to FILE and sleeps
//	forks:N:SECS     start N children that each sleep SECS (a bounded fork loop)
//	binary           print bytes that are not UTF-8, and NUL
//	alive:FILE       exit 0 if the process whose pid FILE holds runs, else 1
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 3 && os.Args[1] == "maxrss" {
		maxRSS(os.Args[2], os.Args[3:])
	}
	for _, op := range os.Args[1:] {
		name, arg, _ := strings.Cut(op, ":")
		switch name {
		case "echo":
			fmt.Println(arg)
		case "err":
			fmt.Fprintln(os.Stderr, arg)
		case "alive":
			b, _ := os.ReadFile(arg)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if pid <= 0 || syscall.Kill(pid, 0) != nil {
				os.Exit(1)
			}
		case "count":
			appendLine(arg)
		case "pid":
			write(arg, strconv.Itoa(os.Getpid()))
		case "once":
			if _, err := os.Stat(arg); err == nil {
				os.Exit(0)
			}
			write(arg, "")
		case "sleep":
			secs, _ := strconv.ParseFloat(arg, 64)
			time.Sleep(time.Duration(secs * float64(time.Second)))
		case "sleepfile":
			b, _ := os.ReadFile(arg)
			secs, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
			time.Sleep(time.Duration(secs * float64(time.Second)))
		case "excl":
			file, s, _ := strings.Cut(arg, ":")
			f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				fmt.Fprintf(os.Stderr, "excl: %v\n", err)
				os.Exit(3)
			}
			f.Close()
			secs, _ := strconv.ParseFloat(s, 64)
			time.Sleep(time.Duration(secs * float64(time.Second)))
			os.Remove(file)
		case "wait":
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(arg); err == nil {
					break
				}
				if time.Now().After(deadline) {
					os.Exit(99)
				}
				time.Sleep(20 * time.Millisecond)
			}
		case "bytes":
			os.Stdout.WriteString(xLines(arg))
		case "claudereply":
			// claude's stream-json for a reply of ARG bytes: lines
			// "reply line N ...", then END OF REPLY, in one result event.
			n, _ := strconv.Atoi(arg)
			w := bufio.NewWriterSize(os.Stdout, 1<<20)
			w.WriteString(`{"type":"system","subtype":"init","session_id":"s-big"}` + "\n")
			w.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"`)
			for i, size := 0, 0; size < n; i++ {
				line := fmt.Sprintf("reply line %07d: the model keeps talking\\n", i)
				w.WriteString(line)
				size += len(line) - 1
			}
			w.WriteString(`END OF REPLY","session_id":"s-big","usage":{"input_tokens":10,"output_tokens":5}}` + "\n")
			w.Flush()
		case "seq":
			n, _ := strconv.Atoi(arg)
			w := bufio.NewWriter(os.Stdout)
			for i := 1; i <= n; i++ {
				w.WriteString(strconv.Itoa(i))
				w.WriteByte('\n')
			}
			w.Flush()
		case "jsonbytes":
			n, _ := strconv.Atoi(arg)
			w := bufio.NewWriter(os.Stdout)
			w.WriteString("[\n")
			item := `"` + strings.Repeat("x", 96) + `",` + "\n"
			for size := 2; size < n; size += len(item) {
				w.WriteString(item)
			}
			w.WriteString(`"end"]` + "\n")
			w.Flush()
		case "errbytes":
			os.Stderr.WriteString(xLines(arg))
		case "env":
			env := os.Environ()
			sort.Strings(env)
			for _, kv := range env {
				fmt.Println(kv)
			}
		case "printenv":
			fmt.Println(os.Getenv(arg))
		case "errenv":
			fmt.Fprintln(os.Stderr, os.Getenv(arg))
		case "checkenv":
			k, v, _ := strings.Cut(arg, ":")
			if got, ok := os.LookupEnv(k); !ok || got != v {
				os.Exit(7)
			}
		case "flaky":
			file, n, _ := strings.Cut(arg, ":")
			max, _ := strconv.Atoi(n)
			if appendLine(file) <= max {
				os.Exit(1)
			}
		case "ne":
			a, b, _ := strings.Cut(arg, ":")
			if a == b {
				os.Exit(1)
			}
		case "child":
			file, secs, _ := strings.Cut(arg, ":")
			cmd := exec.Command(os.Args[0], "pid:"+file, "sleep:"+secs)
			if err := cmd.Start(); err != nil {
				fail(err)
			}
		case "symlink":
			target, link, _ := strings.Cut(arg, ":")
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				fail(err)
			}
			if err := os.Symlink(target, link); err != nil {
				fail(err)
			}
		case "rm":
			if err := os.RemoveAll(arg); err != nil {
				fail(err)
			}
		case "write":
			path, content, _ := strings.Cut(arg, ":")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				fail(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				fail(err)
			}
		case "writeenv":
			// writeenv:PATH:VAR writes a first line, then VAR's value, to
			// PATH: a program that puts a secret into a file.
			path, name, _ := strings.Cut(arg, ":")
			if err := os.WriteFile(path, []byte("first line\nvalue: "+os.Getenv(name)+"\n"), 0o644); err != nil {
				fail(err)
			}
		case "exit":
			k, _ := strconv.Atoi(arg)
			os.Exit(k)
		case "cat":
			if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
				fail(err)
			}
		case "sigparent":
			sig := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP}[arg]
			if sig == 0 {
				fail(fmt.Errorf("sigparent: unknown signal %q", arg))
			}
			if err := syscall.Kill(os.Getppid(), sig); err != nil {
				fail(err)
			}
		case "ignoreterm":
			signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		case "daemon":
			// The middle process starts the grandchild in a new session and
			// exits at once: the grandchild is reparented, out of the step's
			// process group.
			file, secs, _ := strings.Cut(arg, ":")
			cmd := exec.Command(os.Args[0], "daemon2:"+file+":"+secs)
			if err := cmd.Run(); err != nil {
				fail(err)
			}
		case "daemon2":
			file, secs, _ := strings.Cut(arg, ":")
			cmd := exec.Command(os.Args[0], "pid:"+file, "sleep:"+secs)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				fail(err)
			}
			os.Exit(0)
		case "forks":
			n, secs, _ := strings.Cut(arg, ":")
			k, _ := strconv.Atoi(n)
			for i := 0; i < k; i++ {
				cmd := exec.Command(os.Args[0], "sleep:"+secs)
				if err := cmd.Start(); err != nil {
					break // the fork loop hit a limit: that is what it tests
				}
			}
		case "binary":
			os.Stdout.Write([]byte{0xff, 0xfe, 0x00, 'o', 'k', 0xc3, 0x28, '\n'})
		default:
			fail(fmt.Errorf("unknown operation %q", op))
		}
	}
}

// appendLine appends a line to file and returns how many lines it has.
func appendLine(file string) int {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail(err)
	}
	if _, err := f.WriteString("x\n"); err != nil {
		fail(err)
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		fail(err)
	}
	return strings.Count(string(data), "\n")
}

// write writes data to file atomically, so a reader never sees it half
// written.
func write(file, data string) {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		fail(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(98)
}

// xLines returns n (a decimal string) bytes of 100-byte lines of x.
func xLines(n string) string {
	size, _ := strconv.Atoi(n)
	line := strings.Repeat("x", 99) + "\n"
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(line)
	}
	return b.String()[:size]
}

// maxRSS (helper maxrss OUT ARGV...) runs ARGV with this process's stdin,
// stdout and stderr, writes its peak resident set size in KiB to OUT and
// exits with its status. Started from this small process, the child's
// peak is its own: Linux keeps the memory high-water mark of the process
// image an execve replaces, and Go starts a child by vfork, in its
// parent's memory, so a smithvm started by the test binary reports the
// test binary's peak when that one is larger.
func maxRSS(out string, argv []string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "helper maxrss:", err)
		os.Exit(97)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		_ = os.WriteFile(out, []byte(strconv.FormatInt(ru.Maxrss, 10)), 0o644)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
