package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"smith/source"
)

// summary is check's last line on stderr: ok: 2 files, 0 errors, 1 warning.
func summary(files int, ds source.Diagnostics) string {
	var errs, warns int
	for _, d := range ds {
		if d.Severity == source.SevError {
			errs++
		} else {
			warns++
		}
	}
	word := "ok"
	if errs > 0 {
		word = "failed"
	}
	return fmt.Sprintf("%s: %s, %s, %s", word, plural(files, "file"), plural(errs, "error"), plural(warns, "warning"))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// SARIF 2.1.0, the subset code-scanning tools read: one run, the codes
// of the table as rules, one result per diagnostic with its location.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	ShortDescription sarifMessage `json:"shortDescription"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// writeSARIF prints ds as a SARIF 2.1.0 log. Rules are the codes that
// occur, in code-table order; levels are error and warning.
func writeSARIF(w io.Writer, ds source.Diagnostics) error {
	used := map[source.Code]bool{}
	for _, d := range ds {
		used[d.Code] = true
	}
	rules := []sarifRule{} // the schema wants an array, also when empty
	index := map[source.Code]int{}
	for _, ci := range source.Codes() {
		if used[ci.Code] {
			index[ci.Code] = len(rules)
			rules = append(rules, sarifRule{ID: string(ci.Code), ShortDescription: sarifMessage{ci.Summary}})
			delete(used, ci.Code)
		}
	}
	var rest []string
	for c := range used {
		rest = append(rest, string(c))
	}
	sort.Strings(rest)
	for _, c := range rest {
		index[source.Code(c)] = len(rules)
		rules = append(rules, sarifRule{ID: c, ShortDescription: sarifMessage{c}})
	}
	results := make([]sarifResult, 0, len(ds))
	for _, d := range ds {
		level := "error"
		if d.Severity != source.SevError {
			level = "warning"
		}
		loc := sarifPhysical{ArtifactLocation: sarifArtifact{URI: filepath.ToSlash(d.Pos.File)}}
		if d.Pos.Line > 0 {
			loc.Region = &sarifRegion{StartLine: d.Pos.Line, StartColumn: d.Pos.Col}
		}
		results = append(results, sarifResult{RuleID: string(d.Code), RuleIndex: index[d.Code], Level: level,
			Message: sarifMessage{d.Msg}, Locations: []sarifLocation{{PhysicalLocation: loc}}})
	}
	log := sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{{Tool: sarifTool{Driver: sarifDriver{Name: "smithc", Rules: rules}}, Results: results}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}
