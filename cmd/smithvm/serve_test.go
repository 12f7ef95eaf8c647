package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// TestServePortInUse: a viewer asked to listen where another program
// already does is refused (E_USAGE, exit 2), saying how to choose another
// port, not with the system's message alone.
func TestServePortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	base := t.TempDir()
	var out, errb bytes.Buffer
	st := run([]string{"serve", "--base", base, "--addr", l.Addr().String()}, strings.NewReader(""), &out, &errb)
	want := "smithvm serve: E_USAGE: listen tcp " + l.Addr().String()
	if st != 2 || !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "--addr 127.0.0.1:0 for a free one") {
		t.Errorf("serve on a port in use = exit %d, stderr %q; want 2, %q and how to choose another port", st, errb.String(), want)
	}
}
