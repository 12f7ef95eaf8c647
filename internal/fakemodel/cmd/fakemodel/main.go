// Command fakemodel runs the fake model server (package
// smith/internal/fakemodel) on 127.0.0.1 until it is interrupted or idle:
//
//	go run ./internal/fakemodel/cmd/fakemodel [-addr 127.0.0.1:8791] [-script rules.json] [-idle 10m] [-log requests.jsonl]
//
// It prints the base URL to point a CLI at, then one line per request on
// stderr. The script is a JSON list of rules (see fakemodel.Rule); without
// one, every prompt gets the answer "fakemodel: no rule matches this prompt".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"smith/internal/fakemodel"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (127.0.0.1 only)")
	script := flag.String("script", "", "JSON file: a list of rules")
	idle := flag.Duration("idle", 10*time.Minute, "stop after this long without a request")
	logPath := flag.String("log", "", "append every request (JSON, one per line, with its body) to this file")
	flag.Parse()
	if err := run(*addr, *script, *idle, *logPath); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(2)
	}
}

func run(addr, script string, idle time.Duration, logPath string) error {
	var rules []fakemodel.Rule
	if script != "" {
		b, err := os.ReadFile(script)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &rules); err != nil {
			return fmt.Errorf("%s: %w", script, err)
		}
	}
	var logFile *os.File
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		logFile = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := fakemodel.StartAt(ctx, addr, rules, fakemodel.Options{Idle: idle, OnLog: func(l fakemodel.Logged) {
		fmt.Fprintf(os.Stderr, "fakemodel: %s %s %s rule=%d status=%d prompt=%d bytes\n", l.Protocol, l.Method, l.Path, l.Rule, l.Status, len(l.Prompt))
		if logFile != nil {
			b, _ := json.Marshal(struct {
				fakemodel.Logged
				Body string `json:"body"`
			}{l, l.Body})
			_, _ = logFile.Write(append(b, '\n'))
		}
	}})
	if err != nil {
		return err
	}
	fmt.Println(srv.URL)
	<-srv.Done()
	return nil
}
