package compiler

import (
	"encoding/json"
	"testing"

	"smith/lang"
	"smith/source"
)

// TestTemplateKey: two templates have the same key exactly when they are
// equal field by field (as their JSON, which the pool's key was before).
func TestTemplateKey(t *testing.T) {
	ref := func(raw string, line int, path ...lang.PathElem) lang.Part {
		return lang.Part{Ref: &lang.Ref{Path: path, Raw: raw, Pos: source.Pos{File: "w.yaml", Line: line, Col: 3}}}
	}
	k := func(s string) lang.PathElem { return lang.PathElem{Key: s} }
	tms := []lang.Template{
		{},
		lang.Lit("a"),
		lang.Lit("ab"),
		{Parts: []lang.Part{{Lit: "a"}, {Lit: "b"}}},
		{Parts: []lang.Part{{Lit: "1:a"}}},
		{Parts: []lang.Part{ref("context.x", 1, k("context"), k("x"))}},
		{Parts: []lang.Part{ref("context.x", 2, k("context"), k("x"))}},
		{Parts: []lang.Part{ref("context.y", 1, k("context"), k("y"))}},
		{Parts: []lang.Part{ref("steps.S.json[0]", 1, k("steps"), k("S"), k("json"), lang.PathElem{Index: 0, IsIndex: true})}},
		{Parts: []lang.Part{ref("steps.S.json[1]", 1, k("steps"), k("S"), k("json"), lang.PathElem{Index: 1, IsIndex: true})}},
		{Parts: []lang.Part{{Lit: "x "}, ref("context.x", 1, k("context"), k("x"))}},
	}
	for i, a := range tms {
		for j, b := range tms {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			same := string(templateKey(a)) == string(templateKey(b))
			if same != (string(ja) == string(jb)) || same != (i == j) {
				t.Errorf("templates %d and %d: same key %v, same JSON %v", i, j, same, string(ja) == string(jb))
			}
		}
	}
}
