//go:build !linux

package proc

import (
	"errors"
	"io"
	"os"
	"time"
)

func pipeGrow(io.Reader) {}

// openUnnamed: no unnamed files here; stdout is piped.
func openUnnamed(string) *os.File { return nil }

func linkUnnamed(*os.File, string) error { return errors.ErrUnsupported }

// A pipeStream is a stream read by a shared goroutine: none here, exec
// copies every stream.
type pipeStream struct{}

func newPipeStream(io.Writer) (*pipeStream, *os.File) { return nil, nil }
func drainStreams([]*pipeStream, time.Duration)       {}
