package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"smith/source"
)

// ReadContextFile reads the JSON object of a --context-file (smithc check,
// smithvm run): its keys become context keys. A file that cannot be read
// is E_USAGE; one that is not a JSON object (or nests too deep) is the
// parser's code (E_PARSE) with FILE:LINE:COL and what was expected, in
// words.
func ReadContextFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		why := "cannot read it"
		switch {
		case errors.Is(err, fs.ErrNotExist):
			why = "no such file"
		case errors.Is(err, fs.ErrPermission):
			why = "permission denied"
		default:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				why = pe.Err.Error()
			}
		}
		return nil, &source.Error{Code: source.EUsage, Msg: "--context-file " + path + ": " + why}
	}
	if _, ds := ParseJSON(path, data); ds.HasErrors() {
		for _, d := range explainJSON(data, ds) {
			if d.Severity == source.SevError {
				return nil, &source.Error{Code: d.Code, Msg: fmt.Sprintf("--context-file %s: %s (it must hold one JSON object: {\"KEY\": VALUE, ...})", d.Pos, d.Msg)}
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		// The parser took it: only a bug gets here.
		return nil, &source.Error{Code: source.EParse, Msg: "--context-file " + path, Err: err}
	}
	return m, nil
}
