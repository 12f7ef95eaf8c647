package serve

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
)

// A run page follows its run by short polls, not by holding a stream: a
// browser allows six connections per site (HTTP/1.1), shared by its tabs,
// so a stream per page would leave the seventh page without updates. A
// poll holds a connection for the few milliseconds it takes.

// maxPoll bounds the bytes one poll returns; the client polls again at
// once for the rest.
const maxPoll = 4 << 20

// pollEvents is GET /api/runs/ID/events?poll=1&after=N: the events after
// event_seq N that events.jsonl holds now, one JSON line each, and at
// once. Its ETag is the offset in events.jsonl after the last complete
// line returned: a client that sends it back (If-None-Match) gets 304 when
// nothing was appended, and otherwise only the bytes after it are read, so
// a poll costs what was appended since the last one, not the whole log.
func (s *Server) pollEvents(w http.ResponseWriter, r *http.Request, id string) {
	after := lastEventID(r)
	w.Header().Set("Cache-Control", "no-store")
	f, err := s.openRunFile(id, filepath.Join("logs", "events.jsonl"))
	if err != nil {
		var nf notFound
		if errors.Is(err, fs.ErrNotExist) || errors.As(err, &nf) {
			w.Header().Set("ETag", `"0"`)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		httpError(w, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		httpError(w, err)
		return
	}
	size := fi.Size()
	from := etagOffset(r.Header.Get("If-None-Match"))
	if from > size {
		from = 0 // the log was replaced: read it again
	}
	if from == size && from > 0 {
		w.Header().Set("ETag", `"`+strconv.FormatInt(from, 10)+`"`)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if from > 0 {
		// The offset must follow a newline, else start over.
		var b [1]byte
		if _, err := f.ReadAt(b[:], from-1); err != nil || b[0] != '\n' {
			from = 0
		}
	}
	st, err := s.readState(id) // for its secrets' masking
	if err != nil {
		httpError(w, err)
		return
	}
	data := make([]byte, min(size-from, maxPoll))
	n, err := f.ReadAt(data, from)
	if err != nil && err != io.EOF {
		httpError(w, err)
		return
	}
	data = data[:n]
	end := bytes.LastIndexByte(data, '\n') + 1 // a line without its newline waits
	data = data[:end]
	mask := s.masker(st)
	var out strings.Builder
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		l := bytes.TrimSpace(data[:i])
		data = data[i+1:]
		if seq, ok := eventSeq(l); ok && seq > after {
			out.WriteString(mask.Replace(string(l)))
			out.WriteByte('\n')
		}
	}
	w.Header().Set("ETag", `"`+strconv.FormatInt(from+int64(end), 10)+`"`)
	w.Header().Set("Content-Type", "application/x-ndjson")
	io.WriteString(w, out.String())
}

// etagOffset reads the offset of an ETag "N"; 0 when there is none.
func etagOffset(tag string) int64 {
	tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
	n, err := strconv.ParseInt(strings.Trim(tag, `"`), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
