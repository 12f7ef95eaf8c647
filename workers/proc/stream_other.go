//go:build !linux

package proc

import (
	"errors"
	"io"
	"os"
)

func pipeGrow(io.Reader) {}

// openUnnamed: no unnamed files here; stdout is piped.
func openUnnamed(string) *os.File { return nil }

func linkUnnamed(*os.File, string) error { return errors.ErrUnsupported }
