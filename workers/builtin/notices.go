package builtin

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"smith/workers/step"
)

// Conflict notices (CONTRACT 12.4): when Internal:UpdateChangePlan of one
// run finds that another active run changes the same files, it appends a
// notice to that run's RUN_ROOT/conflicts.jsonl; the other run's VM turns
// each notice it has not seen yet into a CONFLICT segment (manifests) or a
// WARNING event (YAML) at its next step. The VM counts the notices it has
// taken in its state, so a notice is told once, also across a crash.

// noticesFile holds a run's conflict notices, one JSON object a line.
const noticesFile = "conflicts.jsonl"

// appendNotice appends c to the notices of the run whose RUN_ROOT is root.
// A line is written with one write to a file opened for appending, so a
// reader sees whole lines only (a torn last line is skipped until whole).
func appendNotice(root string, c step.Conflict) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(root, noticesFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(b, '\n'))
	if err := f.Close(); werr == nil {
		werr = err
	}
	return werr
}

// Notices returns the conflict notices of the run whose RUN_ROOT is root
// after the first skip ones, in the order they came.
func Notices(root string, skip int) ([]step.Conflict, error) {
	if unchangedNotices(root, skip) {
		return nil, nil
	}
	return readNotices(root, skip)
}

// readNotices reads the notices file of root and returns the notices after
// the first skip ones.
func readNotices(root string, skip int) ([]step.Conflict, error) {
	f, err := os.Open(filepath.Join(root, noticesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []step.Conflict
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		var c step.Conflict
		if json.Unmarshal(line, &c) != nil {
			break // a line still being written
		}
		n++
		if n > skip {
			out = append(out, c)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	noticesRead(root, n)
	return out, nil
}
