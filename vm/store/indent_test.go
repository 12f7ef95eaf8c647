package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndentJSONMatchesIndent checks indentJSON against json.Indent on
// texts written by encoding/json: fixed cases (empty and nested
// containers, strings with escaped quotes and backslashes, brackets and
// commas in strings) and 2,000 random values.
func TestIndentJSONMatchesIndent(t *testing.T) {
	fixed := []any{
		map[string]any{},
		[]any{},
		map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{map[string]any{}, []any{}}},
		map[string]any{"s": `say "hi", \ {x: [1]} \\"`, "n": 1.5e-9, "t": true, "z": nil},
		[]any{"\u2028<&>\x01", math.Copysign(0, -1), 1e21, "é"},
		"just a string",
		42,
	}
	rng := rand.New(rand.NewPCG(29, 2))
	for range 2000 {
		fixed = append(fixed, randomValue(rng, 0))
	}
	for _, v := range fixed {
		var buf bytes.Buffer
		if err := encode(&buf, v); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, buf.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		got, deepest, ok := indentJSON([]byte("x"), buf.Bytes())
		if !ok || string(got) != "x"+want.String() || deepest != JSONDepth(buf.Bytes()) {
			t.Fatalf("indentJSON(%s) = %q, depth %d, %v; want %q (json.Indent), depth %d", buf.Bytes(), got, deepest, ok, want.String(), JSONDepth(buf.Bytes()))
		}
	}
}

// TestIndentJSONRefuses checks that a text not in encoding/json's compact
// form is left to json.Indent.
func TestIndentJSONRefuses(t *testing.T) {
	for _, src := range []string{`{"a": 1}`, ` {}`, `{"a":[1]`, `[1]]`, `{"a":"x`, "{\n}", `[`} {
		if got, _, ok := indentJSON(nil, []byte(src)); ok {
			t.Errorf("indentJSON(%q) = %q, true; want false", src, got)
		}
	}
}

func randomValue(rng *rand.Rand, depth int) any {
	k := rng.IntN(8)
	if depth > 4 {
		k = rng.IntN(4)
	}
	switch k {
	case 0:
		return rng.Float64() * 1e6
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return nil
	case 3:
		return randomString(rng)
	case 4, 5:
		n := rng.IntN(4)
		a := make([]any, n)
		for i := range a {
			a[i] = randomValue(rng, depth+1)
		}
		return a
	default:
		n := rng.IntN(4)
		m := make(map[string]any, n)
		for range n {
			m[randomString(rng)] = randomValue(rng, depth+1)
		}
		return m
	}
}

func randomString(rng *rand.Rand) string {
	const alphabet = "ab \"\\{}[],:\n\té\u2028<"
	r := []rune(alphabet)
	var b strings.Builder
	for range rng.IntN(8) {
		b.WriteRune(r[rng.IntN(len(r))])
	}
	return b.String()
}

// TestSnapshotTooDeep checks that a state nested deeper than a reader
// accepts is refused, not written, and that the next snapshot works.
func TestSnapshotTooDeep(t *testing.T) {
	s := newStore(t)
	r, err := s.Create("deep")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deep := json.RawMessage(`{"a":` + strings.Repeat("[", maxStateDepth) + strings.Repeat("]", maxStateDepth) + `}`)
	if err := r.WriteSnapshot(deep); !errors.Is(err, errTooDeep) {
		t.Fatalf("WriteSnapshot of a state %d levels deep = %v, want errTooDeep", maxStateDepth+1, err)
	}
	if err := r.WriteSnapshot(map[string]int{"n": 1}); err != nil {
		t.Fatalf("WriteSnapshot after a refused one = %v", err)
	}
	b, err := os.ReadFile(filepath.Join(r.root, stateFile))
	if err != nil || !strings.Contains(string(b), `"n": 1`) {
		t.Fatalf("state.json = %q, %v; want the second state", b, err)
	}
}
