// Command floor is the physical floor of a durable step on this machine,
// the yardstick of bench/run.sh's targets 1, 1b and 4: per step it spawns
// /bin/true and waits for it (with -spawn), appends a 300-byte record to a
// file and fdatasyncs it, which is what a runner that persists every step
// before the next cannot avoid. It prints nothing; time it from outside.
//
//	go run ./bench/floor -steps 1000 [-spawn=false] [-dir DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	steps := flag.Int("steps", 1000, "steps to run")
	spawn := flag.Bool("spawn", true, "spawn /bin/true in each step")
	dir := flag.String("dir", os.TempDir(), "folder of the journal file")
	flag.Parse()
	if err := run(*steps, *spawn, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(steps int, spawn bool, dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "floor.journal"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	record := []byte(strings.Repeat("x", 299) + "\n")
	for i := 0; i < steps; i++ {
		if spawn {
			if err := exec.Command("/bin/true").Run(); err != nil {
				return err
			}
		}
		if _, err := f.Write(record); err != nil {
			return err
		}
		if err := datasync(f); err != nil {
			return err
		}
	}
	return nil
}
