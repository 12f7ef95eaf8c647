package jsonschema

import (
	"os"
	"strings"
	"sync"
	"testing"
)

// compiledAtInit says whether a meta-schema was compiled before main ran.
var compiledAtInit bool

func TestMain(m *testing.M) {
	compiledAtInit = Draft2020.sch != nil || Draft4.sch != nil
	os.Exit(m.Run())
}

// TestDraftsCompiledAtFirstCompile is Smith's patch: linking the package
// compiles no meta-schema (upstream did it in init); the first Compile
// does, and a schema is still checked against its draft's meta-schema.
func TestDraftsCompiledAtFirstCompile(t *testing.T) {
	if compiledAtInit {
		t.Fatal("a draft's meta-schema was compiled before any Compile (at init)")
	}
	c := NewCompiler()
	if err := c.AddResource("bad.json", map[string]any{"type": 5.0}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("bad.json"); err == nil || !strings.Contains(err.Error(), "type") {
		t.Fatalf("Compile of {\"type\": 5} = %v, want an error from the meta-schema", err)
	}
	for _, d := range []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020} {
		if d.sch == nil {
			t.Errorf("%s: meta-schema not compiled after the first Compile", d.url)
		}
		for name, s := range d.allVocabs {
			if s == nil {
				t.Errorf("%s: vocabulary %s not compiled", d.url, name)
			}
		}
	}
}

// TestConcurrentFirstCompile: compiling from many goroutines at once
// compiles the drafts once and every compile sees them (go test -race).
func TestConcurrentFirstCompile(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewCompiler()
			if err := c.AddResource("ok.json", map[string]any{"type": "string"}); err != nil {
				t.Error(err)
				return
			}
			sch, err := c.Compile("ok.json")
			if err != nil {
				t.Error(err)
				return
			}
			if err := sch.Validate(5.0); err == nil {
				t.Error("5 validated against {\"type\": \"string\"}")
			}
		}()
	}
	wg.Wait()
}
