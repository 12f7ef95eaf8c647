package compiler

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"smith/compiler/ir"
	"smith/manifest"
	"smith/source"
)

// lowerSource loads and lowers one document, returning the IR (nil when the
// document has no usable shape) and every diagnostic, sorted.
func lowerSource(name string, src []byte, opt Options) (*ir.Program, source.Diagnostics) {
	wf, mf, ds := manifest.Load(name, src)
	var p *ir.Program
	var more source.Diagnostics
	switch {
	case wf != nil:
		p, more = LowerWorkflow(wf, opt)
	case mf != nil:
		p, more = LowerManifest(mf, opt)
	}
	ds.Append(more...)
	ds.Sort()
	return p, ds
}

// irText prints the IR and, below it, the run-time data and every block's
// spec as compact JSON (templates as their source text, positions left out).
func irText(t *testing.T, p *ir.Program) string {
	t.Helper()
	var b bytes.Buffer
	if err := ir.Print(&b, p); err != nil {
		t.Fatalf("ir.Print: %v", err)
	}
	b.WriteString("--- data\n")
	b.WriteString(specJSON(t, p.Data))
	b.WriteString("\n--- specs\n")
	var walk func([]*ir.Block)
	walk = func(bs []*ir.Block) {
		for _, blk := range bs {
			b.WriteString(blk.ID + ": " + specJSON(t, blk.Spec) + "\n")
			walk(blk.Body)
		}
	}
	for _, n := range p.Nodes {
		if sm := n.StaticMemory; sm != "" {
			b.WriteString("node " + n.ID + " static_memory: " + sm + "\n")
		}
		walk(n.Blocks)
	}
	return b.String()
}

// specJSON renders v as compact JSON with sorted keys, every template as a
// string ("echo ${context.x}"), every TValue as the plain value it stands
// for, and no positions.
func specJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal spec: %v", err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatalf("unmarshal spec: %v", err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(simplify(tree)); err != nil {
		t.Fatalf("marshal spec: %v", err)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

func keysWithin(m map[string]any, allowed ...string) bool {
	for k := range m {
		found := false
		for _, a := range allowed {
			found = found || a == k
		}
		if !found {
			return false
		}
	}
	return true
}

func simplify(v any) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = simplify(x[i])
		}
		return x
	case map[string]any:
		if _, ok := x["parts"]; ok && keysWithin(x, "parts") {
			return templateText(x["parts"].([]any))
		}
		if _, ok := x["kind"].(float64); ok && keysWithin(x, "kind", "bool", "num", "str", "list", "map") {
			return tvalue(x)
		}
		delete(x, "pos")
		for _, k := range []string{"dispatch", "node", "start", "body", "entry"} {
			if x[k] == float64(0) {
				delete(x, k)
			}
		}
		for k, e := range x {
			if e == nil {
				delete(x, k)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x[k] = simplify(x[k])
		}
		return x
	}
	return v
}

func templateText(parts []any) string {
	var b strings.Builder
	for _, p := range parts {
		pm := p.(map[string]any)
		if ref, ok := pm["ref"].(map[string]any); ok {
			b.WriteString("${" + ref["raw"].(string) + "}")
			continue
		}
		b.WriteString(strings.ReplaceAll(pm["lit"].(string), "$", "$$"))
	}
	return b.String()
}

func tvalue(x map[string]any) any {
	switch int(x["kind"].(float64)) {
	case 1:
		b, _ := x["bool"].(bool)
		return b
	case 2:
		return json.Number(x["num"].(string))
	case 3:
		s, _ := x["str"].(map[string]any)
		if p, ok := s["parts"].([]any); ok {
			return templateText(p)
		}
		return ""
	case 4:
		l, _ := x["list"].([]any)
		out := []any{}
		for _, e := range l {
			out = append(out, tvalue(e.(map[string]any)))
		}
		return out
	case 5:
		m, _ := x["map"].([]any)
		var out []any // fields keep their order: [[key, value], ...]
		for _, f := range m {
			fm := f.(map[string]any)
			out = append(out, []any{fm["key"], tvalue(fm["val"].(map[string]any))})
		}
		return map[string]any{"@map": out}
	}
	return nil
}

func TestLowerGolden(t *testing.T) {
	t.Parallel()
	var files []string
	for _, pat := range []string{"testdata/lower/*.yaml", "testdata/lower/*.json"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/lower inputs")
	}
	for _, path := range files {
		stem := strings.TrimSuffix(path, filepath.Ext(path))
		t.Run(filepath.Base(stem), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p, ds := lowerSource(path, src, Options{ContextKeys: []string{"from_cli"}})
			if p == nil {
				t.Fatalf("Lower(%q) = nil, diagnostics:\n%v", path, ds)
			}
			var b strings.Builder
			b.WriteString(irText(t, p))
			b.WriteString("--- diagnostics\n")
			for _, d := range ds {
				b.WriteString(d.Format() + "\n")
			}
			golden(t, stem+".ir.golden", b.String())
		})
	}
}
