package main

import (
	"sort"

	"smith/manifest"
)

// contextFileKeys returns the top-level keys of a JSON object file.
func contextFileKeys(path string) ([]string, error) {
	m, err := manifest.ReadContextFile(path)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}
