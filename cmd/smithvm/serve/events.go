package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// heartbeat is how often an idle events stream sends a comment, so proxies
// and browsers keep it open.
const heartbeat = 15 * time.Second

// apiEvents is GET /api/runs/ID/events: logs/events.jsonl as server-sent
// events, then every new line as it is appended. Each event's id is its
// event_seq; a client that sends Last-Event-ID (or ?after=N) gets only the
// events after that one.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if r.URL.Query().Get("poll") != "" {
		s.pollEvents(w, r, id)
		return
	}
	st, err := s.readState(id)
	if err != nil {
		httpError(w, err)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "serve: streaming unsupported", http.StatusInternalServerError)
		return
	}
	after := lastEventID(r)
	mask := s.masker(st)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	io.WriteString(w, "retry: 1000\n\n")
	fl.Flush()

	f := &follower{open: func() (*os.File, error) {
		return s.openRunFile(id, filepath.Join("logs", "events.jsonl"))
	}}
	defer f.close()
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	idle := time.Now()
	for {
		lines, err := f.next()
		if err != nil {
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", strings.ReplaceAll(err.Error(), "\n", " "))
			fl.Flush()
			return
		}
		wrote := false
		for _, l := range lines {
			seq, ok := eventSeq(l)
			if !ok || seq <= after {
				continue
			}
			after = seq
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", seq, mask.Replace(string(l)))
			wrote = true
		}
		if !wrote && time.Since(idle) > heartbeat {
			io.WriteString(w, ": keep-alive\n\n")
			wrote = true
		}
		if wrote {
			fl.Flush()
			idle = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// lastEventID is the Last-Event-ID header, else the after query parameter,
// else 0.
func lastEventID(r *http.Request) int {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// eventSeq returns the event_seq of one events.jsonl line.
func eventSeq(line []byte) (int, bool) {
	var e struct {
		Seq *int `json:"event_seq"`
	}
	if json.Unmarshal(line, &e) != nil || e.Seq == nil {
		return 0, false
	}
	return *e.Seq, true
}

// A follower reads the complete lines appended to a file, opening it once
// it exists. A line without its newline yet waits for the next call.
type follower struct {
	open    func() (*os.File, error)
	f       *os.File
	partial []byte
	buf     [64 << 10]byte
}

// next returns the complete lines appended since the last call.
func (fo *follower) next() ([][]byte, error) {
	if fo.f == nil {
		f, err := fo.open()
		if err != nil {
			var nf notFound
			if errors.Is(err, fs.ErrNotExist) || errors.As(err, &nf) {
				return nil, nil // not written yet
			}
			return nil, err
		}
		fo.f = f
	}
	var lines [][]byte
	for {
		n, err := fo.f.Read(fo.buf[:])
		data := append(fo.partial, fo.buf[:n]...)
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			if l := bytes.TrimSpace(data[:i]); len(l) > 0 {
				lines = append(lines, append([]byte(nil), l...))
			}
			data = data[i+1:]
		}
		fo.partial = append(fo.partial[:0:0], data...)
		if err == io.EOF || n == 0 {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
	}
}

func (fo *follower) close() {
	if fo.f != nil {
		fo.f.Close()
	}
}
