package manifest

import (
	"reflect"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"

	"smith/source"
)

// TestFastTokenTypes checks the token types the fast paths write (they do
// not build the lexers) against the numbers the lexers give the rules.
func TestFastTokenTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lexer *lexer.StatefulDefinition
		rule  string
		got   lexer.TokenType
	}{
		{"lit", templateLexer(), "Lit", tokLit},
		{"key", templateLexer(), "Key", tokKey},
		{"ref open", templateLexer(), "RefOpen", tokRefOpen},
		{"fail", actionLexer(), "Fail", tokActFail},
		{"text", actionLexer(), "Text", tokActText},
		{"word", actionLexer(), "Word", tokActWord},
		{"colon", actionLexer(), "Colon", tokActColon},
		{"prefix", actionLexer(), "Prefix", tokActPre},
		{"ident", actionLexer(), "Ident", tokActIdent},
	}
	for _, tt := range tests {
		want, ok := tt.lexer.Symbols()[tt.rule]
		if !ok || tt.got != want {
			t.Errorf("%s: token type %d, want the lexer's %q: %d (%v)", tt.name, tt.got, tt.rule, want, ok)
		}
	}
}

// fastSeeds are strings for the fast-path tests: common well-formed forms
// (which must take the fast path) and every odd form of the grammar tests.
var fastSeeds = []struct {
	name string
	s    string
	fast bool // the template fast path must accept it
}{
	{name: "empty", s: "", fast: true},
	{name: "plain", s: "plain", fast: true},
	{name: "item", s: "${item}", fast: true},
	{name: "mixed", s: "a ${loop.index} b", fast: true},
	{name: "steps", s: "echo ${steps.Prev.output} for ${context.project}", fast: true},
	{name: "multiline", s: "line one\nline ${context.a-b_c.d}\n\tend ${x}", fast: true},
	{name: "unicode", s: "é ${context.ü}", fast: false},
	{name: "unicode lit", s: "héllo ${x} wörld", fast: true},
	{name: "adjacent", s: "${a}${b}", fast: true},
	{name: "digit root", s: "${1a}", fast: true},
	{name: "index", s: "${steps.S.json.result.files[0]}"},
	{name: "esc", s: "$$"},
	{name: "dollar", s: "$"},
	{name: "esc ref", s: "$$${x}"},
	{name: "pass", s: "${{ github.sha }}"},
	{name: "pass brace", s: "${{ a }}}"},
	{name: "pass open", s: "${{ x"},
	{name: "open", s: "${"},
	{name: "empty ref", s: "${}"},
	{name: "space", s: "${ x}"},
	{name: "bad index", s: "${a[x]}"},
	{name: "open index", s: "${a[0}"},
	{name: "double dot", s: "${a..b}"},
	{name: "trailing dot", s: "x\n${y.}"},
	{name: "big index", s: "${a[99999999999999999999]}"},
	{name: "mix esc", s: "${a}${b}$$c"},
	{name: "bad bytes", s: "\xff${\xfe}"},
	{name: "two bad", s: "${a.b c} ${d..e}"},
	{name: "unterminated", s: "${a.b"},
}

// TestFastTemplate checks that where the template fast path answers, its
// tree is exactly the one the grammar builds.
func TestFastTemplate(t *testing.T) {
	for _, tt := range fastSeeds {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := fastTemplate(tt.s)
			if tt.fast && !ok {
				t.Fatalf("fastTemplate(%q) ok = false, want true", tt.s)
			}
			checkFastTemplate(t, tt.s, got, ok)
		})
	}
}

func checkFastTemplate(t *testing.T, s string, got *templateAST, ok bool) {
	t.Helper()
	if !ok {
		return
	}
	want, err := templateParser().ParseString("", s)
	if err != nil {
		t.Fatalf("fastTemplate(%q) accepted what the grammar rejects: %v", s, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fastTemplate(%q) = %+v, want %+v", s, got, want)
	}
}

var fastActionSeeds = []struct {
	name string
	s    string
	fast bool // the action fast path must accept it
}{
	{name: "jump block", s: "JUMP:Block:Feature_Implement__GenerateCode", fast: true},
	{name: "call node", s: "CALL:Node:Review", fast: true},
	{name: "jump plain", s: "JUMP:x.y-z", fast: true},
	{name: "jump node word", s: "JUMP:Nodes", fast: true},
	{name: "return", s: "RETURN", fast: true},
	{name: "halt", s: "HALT_AND_FLAG", fast: true},
	{name: "end", s: "END", fast: true},
	{name: "fail", s: "FAIL:boom: at 3", fast: true},
	{name: "fail multiline", s: "FAIL: two\nlines", fast: true},
	{name: "fail empty", s: "FAIL:"},
	{name: "fail blank", s: "FAIL: \t"},
	{name: "fail spaces", s: "FAIL:  \u00a0é and more"},
	{name: "fail nbsp", s: "FAIL:\u00a0x", fast: true},
	{name: "fail unicode", s: "FAIL: é → ü", fast: true},
	{name: "jump dotted", s: "JUMP:Block:a.b-c_1", fast: true},
	{name: "call plain", s: "CALL:N1", fast: true},
	{name: "fail no colon", s: "FAIL"},
	{name: "jump empty", s: "JUMP:"},
	{name: "jump prefix only", s: "JUMP:Node:"},
	{name: "jump two prefixes", s: "JUMP:Node:Block:X"},
	{name: "typo", s: "JUMPP:X"},
	{name: "lower", s: "jump:x"},
	{name: "return arg", s: "RETURN:X"},
	{name: "space", s: "JUMP:a b"},
	{name: "colon", s: ":"},
	{name: "bad byte", s: "\xff"},
	{name: "unicode target", s: "CALL:é"},
	{name: "empty", s: ""},
}

// TestFastAction checks that where the action fast path answers, its
// Action is exactly the one the grammar's reading gives.
func TestFastAction(t *testing.T) {
	for _, tt := range fastActionSeeds {
		t.Run(tt.name, func(t *testing.T) {
			ok := checkFastAction(t, tt.s)
			if tt.fast && !ok {
				t.Fatalf("fastAction(%q) ok = false, want true", tt.s)
			}
		})
	}
}

// checkFastAction compares the fast path's Action for s with the
// grammar's, at a position inside a document, and reports whether the
// fast path answered.
func checkFastAction(t *testing.T, s string) bool {
	t.Helper()
	pos := source.Pos{File: "f.json", Line: 3, Col: 7}
	at := func(p lexer.Position) source.Pos { return grammarPos(pos, lexer.Position{Line: 1, Column: 1}, p) }
	got, ok := fastAction(s, at)
	if !ok {
		return false
	}
	want, d := grammarAction(s, at)
	if d != nil {
		t.Fatalf("fastAction(%q) accepted what the grammar rejects: %v", s, *d)
	}
	if got != want {
		t.Fatalf("fastAction(%q) = %+v, want %+v", s, got, want)
	}
	return true
}

func FuzzFastTemplate(f *testing.F) {
	for _, tt := range fastSeeds {
		f.Add(tt.s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := fastTemplate(s)
		checkFastTemplate(t, s, got, ok)
	})
}

func FuzzFastAction(f *testing.F) {
	for _, tt := range fastActionSeeds {
		f.Add(tt.s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkFastAction(t, s)
	})
}
