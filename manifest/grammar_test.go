package manifest

import (
	"fmt"
	"strings"
	"testing"

	"smith/lang"
	"smith/source"
)

// at is the position of a string value's first character in most cases:
// line 3, column 5 of f.json, so that shifted columns are visible.
var at = source.Pos{File: "f.json", Line: 3, Col: 5}

// showAction prints an action or its diagnostic for comparison.
func showAction(a Action, d *source.Diagnostic) string {
	if d != nil {
		return d.Format()
	}
	s := fmt.Sprintf("%s @%s", a.Kind, a.Pos)
	switch a.Kind {
	case ActJump, ActCall:
		s += fmt.Sprintf(" target=%q @%s", a.Target, a.TargetPos)
	case ActFail:
		s += fmt.Sprintf(" msg=%q @%s", a.Msg, a.TargetPos)
	}
	return s
}

func TestParseAction(t *testing.T) {
	t.Parallel()
	const bad = "f.json:3:5: error: E_BAD_ACTION: "
	tests := []struct {
		name string
		in   string
		pos  source.Pos
		want string
	}{
		{"jump block", "JUMP:Block:Feature_Implement__GenerateCode", at,
			`JUMP @f.json:3:5 target="Block:Feature_Implement__GenerateCode" @f.json:3:10`},
		{"jump bare id", "JUMP:Feature_Implement__GenerateCode", at,
			`JUMP @f.json:3:5 target="Feature_Implement__GenerateCode" @f.json:3:10`},
		{"call node", "CALL:Node:Review", at,
			`CALL @f.json:3:5 target="Node:Review" @f.json:3:10`},
		{"id chars", "JUMP:a-b.c_9", at, `JUMP @f.json:3:5 target="a-b.c_9" @f.json:3:10`},
		{"return", "RETURN", at, "RETURN @f.json:3:5"},
		{"halt", "HALT_AND_FLAG", at, "HALT_AND_FLAG @f.json:3:5"},
		{"end", "END", at, "END @f.json:3:5"},
		{"fail", "FAIL:tests failed: 3 of 10", at,
			`FAIL @f.json:3:5 msg="tests failed: 3 of 10" @f.json:3:10`},
		{"fail space after colon", "FAIL:  boom", at, `FAIL @f.json:3:5 msg="boom" @f.json:3:12`},
		{"fail colon message", "FAIL::x", at, `FAIL @f.json:3:5 msg=":x" @f.json:3:10`},
		{"surrounding space", "  CALL:Node:Review \t", at,
			`CALL @f.json:3:7 target="Node:Review" @f.json:3:12`},
		{"column one", "END", source.Pos{File: "m.json", Line: 1, Col: 1}, "END @m.json:1:1"},
		{"multi-line", "\n\n   JUMP:X\n", at, `JUMP @f.json:5:4 target="X" @f.json:5:9`},
		{"multi-line fail message", "FAIL:\n  line two", at, `FAIL @f.json:3:5 msg="line two" @f.json:4:3`},
		{"unknown pos", "JUMP:X", source.Pos{}, `JUMP @- target="X" @-`},

		{"typo", "JUMPP:X", at,
			bad + "action 'JUMPP:X' is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL: (did you mean 'JUMP'?)"},
		{"lower case", "jump:X", at,
			bad + "action 'jump:X' is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL: (did you mean 'JUMP'?)"},
		{"typo with junk", "RETRUN now", at,
			bad + "action 'RETRUN now' is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL: (did you mean 'RETURN'?)"},
		{"no keyword", ":X", at,
			bad + "action ':X' is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL:"},
		{"far off", "GOTO:X", at,
			bad + "action 'GOTO:X' is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL:"},
		{"empty", "", at,
			bad + "action '' is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL:"},
		{"blank", "   ", at,
			"f.json:3:8: error: E_BAD_ACTION: action '' is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL:"},
		{"jump no target", "JUMP:", at, "f.json:3:10: error: E_BAD_ACTION: action 'JUMP:' names no target"},
		{"jump no colon", "JUMP", at, "f.json:3:9: error: E_BAD_ACTION: action 'JUMP' names no target"},
		{"prefix only", "CALL:Node:", at, "f.json:3:15: error: E_BAD_ACTION: action 'CALL:Node:' names no target"},
		{"return argument", "RETURN:X", at, "f.json:3:11: error: E_BAD_ACTION: action 'RETURN:X' takes no argument"},
		{"end junk", "END now", at, "f.json:3:8: error: E_BAD_ACTION: action 'END now' takes no argument"},
		{"halt argument", "HALT_AND_FLAG:x", at,
			"f.json:3:18: error: E_BAD_ACTION: action 'HALT_AND_FLAG:x' takes no argument"},
		{"fail no message", "FAIL:", at, "f.json:3:10: error: E_BAD_ACTION: action 'FAIL:' has no message"},
		{"fail blank message", "FAIL:\n ", at, "f.json:3:10: error: E_BAD_ACTION: action 'FAIL:' has no message"},
		{"fail no colon", "FAIL", at, "f.json:3:9: error: E_BAD_ACTION: action 'FAIL' has no message"},
		{"jump space", "JUMP X", at,
			"f.json:3:9: error: E_BAD_ACTION: action 'JUMP X': expected ':' after 'JUMP', found ' '"},
		{"space in target", "JUMP:a b", at,
			"f.json:3:11: error: E_BAD_ACTION: action 'JUMP:a b': unexpected ' ' in target (expected an id of letters, digits, '_', '.' or '-', with an optional Node: or Block: prefix)"},
		{"two prefixes", "JUMP:Node:Block:X", at,
			"f.json:3:15: error: E_BAD_ACTION: action 'JUMP:Node:Block:X': unexpected 'Block:' in target (expected an id of letters, digits, '_', '.' or '-', with an optional Node: or Block: prefix)"},
		{"other prefix", "JUMP:Step:X", at,
			"f.json:3:14: error: E_BAD_ACTION: action 'JUMP:Step:X': unexpected ':' in target (expected an id of letters, digits, '_', '.' or '-', with an optional Node: or Block: prefix)"},
		{"multi-line bad char", "\n  CALL:a\nb", at,
			`f.json:4:9: error: E_BAD_ACTION: action 'CALL:a\nb': unexpected '\n' in target (expected an id of letters, digits, '_', '.' or '-', with an optional Node: or Block: prefix)`},
		{"non-ascii", "JUMP:Revüe", at,
			"f.json:3:13: error: E_BAD_ACTION: action 'JUMP:Revüe': unexpected 'ü' in target (expected an id of letters, digits, '_', '.' or '-', with an optional Node: or Block: prefix)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := showAction(ParseAction(tt.in, tt.pos)); got != tt.want {
				t.Errorf("ParseAction(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestActionKindString(t *testing.T) {
	t.Parallel()
	want := map[ActionKind]string{
		ActJump: "JUMP", ActCall: "CALL", ActReturn: "RETURN", ActHalt: "HALT_AND_FLAG",
		ActEnd: "END", ActFail: "FAIL", 0: "ActionKind(0)", 7: "ActionKind(7)",
	}
	for k, w := range want {
		if got := k.String(); got != w {
			t.Errorf("ActionKind(%d).String() = %q, want %q", k, got, w)
		}
	}
}

// showTemplate prints a template's parts or its diagnostics.
func showTemplate(tm lang.Template, ds source.Diagnostics) string {
	if len(ds) > 0 {
		return ds.Error()
	}
	var b strings.Builder
	for i, p := range tm.Parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		if p.Ref != nil {
			fmt.Fprintf(&b, "ref(%s@%s)", p.Ref.Raw, p.Ref.Pos)
		} else {
			fmt.Fprintf(&b, "lit(%q)", p.Lit)
		}
	}
	return b.String()
}

func TestParseTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		pos  source.Pos
		want string
	}{
		{"empty", "", at, ""},
		{"plain", "hello world", at, `lit("hello world")`},
		{"item", "${item}", at, "ref(item@f.json:3:5)"},
		{"around", "a ${loop.index} b", at, `lit("a ") ref(loop.index@f.json:3:7) lit(" b")`},
		{"json path", "${steps.S.json.result.files[0]}", at, "ref(steps.S.json.result.files[0]@f.json:3:5)"},
		{"dashes and digits", "${steps.build-1.json.0x[12][3]}", at, "ref(steps.build-1.json.0x[12][3]@f.json:3:5)"},
		{"canonical index", "${a[007]}", at, "ref(a[7]@f.json:3:5)"},
		{"context env run", "${context.a.b}/${env.HOME}/${run.timestamp_utc}", at,
			`ref(context.a.b@f.json:3:5) lit("/") ref(env.HOME@f.json:3:20) lit("/") ref(run.timestamp_utc@f.json:3:32)`},
		{"adjacent refs", "${a}${b}", at, "ref(a@f.json:3:5) ref(b@f.json:3:9)"},
		{"escaped dollar", "cost: $$5", at, `lit("cost: $5")`},
		{"escaped ref", "$${item}", at, `lit("${item}")`},
		{"lone dollar", "a $ b $", at, `lit("a $ b $")`},
		{"dollar before ref", "$${x}$${y}", at, `lit("${x}${y}")`},
		{"three dollars", "$$${x}", at, `lit("$") ref(x@f.json:3:7)`},
		{"passthrough", "run: ${{ github.sha }} ok", at, `lit("run: ${{ github.sha }} ok")`},
		{"passthrough first close", "${{ a }}}", at, `lit("${{ a }}}")`},
		{"passthrough with dollars", "${{ $x ${y} }}$$", at, `lit("${{ $x ${y} }}$")`},
		{"multi-line", "line one\n  ${steps.S.output}\n", at, `lit("line one\n  ") ref(steps.S.output@f.json:4:3) lit("\n")`},
		{"column one", "x${a}", source.Pos{File: "w.yaml", Line: 1, Col: 1}, `lit("x") ref(a@w.yaml:1:2)`},
		{"non-ascii before", "ça ${a}", at, `lit("ça ") ref(a@f.json:3:8)`},

		{"key expected", "${steps.}", at,
			"f.json:3:13: error: E_PARSE: malformed reference '${steps.}': expected a key after '.'"},
		{"empty ref", "x ${}", at,
			"f.json:3:9: error: E_PARSE: malformed reference '${}': expected a name after '${'"},
		{"space inside", "${ item }", at,
			"f.json:3:7: error: E_PARSE: malformed reference '${ item }': expected a name after '${'"},
		{"space after", "${item }", at,
			"f.json:3:11: error: E_PARSE: malformed reference '${item }': unexpected ' ' (expected '.', '[' or '}')"},
		{"bad index", "${a[x]}", at,
			"f.json:3:9: error: E_PARSE: malformed reference '${a[x]}': expected an integer index after '['"},
		{"negative index", "${a[-1]}", at,
			"f.json:3:9: error: E_PARSE: malformed reference '${a[-1]}': expected an integer index after '['"},
		{"unclosed index", "${a[0}", at,
			"f.json:3:10: error: E_PARSE: malformed reference '${a[0}': expected ']' after the index"},
		{"double dot", "${a..b}", at,
			"f.json:3:9: error: E_PARSE: malformed reference '${a..b}': expected a key after '.'"},
		{"root index", "${[0]}", at,
			"f.json:3:7: error: E_PARSE: malformed reference '${[0]}': expected a name after '${'"},
		{"digit root", "${1a}", at,
			"f.json:3:7: error: E_PARSE: malformed reference '${1a}': expected a name after '${', found '1a'"},
		{"bad char", "${a.b$c}", at,
			"f.json:3:10: error: E_PARSE: malformed reference '${a.b$c}': unexpected '$' (expected '.', '[' or '}')"},
		{"huge index", "${a[99999999999999999999]}", at,
			"f.json:3:9: error: E_PARSE: malformed reference '${a[99999999999999999999]}': index '99999999999999999999' is too large"},
		{"unterminated", "see ${steps.S.output", at,
			"f.json:3:9: error: E_PARSE: malformed reference '${steps.S.output': unterminated '${' (expected '}')"},
		{"unterminated passthrough", "a ${{ b", at,
			"f.json:3:7: error: E_PARSE: unterminated '${{' in '${{ b': expected '}}'"},
		{"multi-line error", "ok ${a}\n\tthen ${x.}", at,
			"f.json:4:11: error: E_PARSE: malformed reference '${x.}': expected a key after '.'"},
		{"all errors", "${a b} and ${c..d} and ${", at,
			"f.json:3:8: error: E_PARSE: malformed reference '${a b}': unexpected ' ' (expected '.', '[' or '}')\n" +
				"f.json:3:20: error: E_PARSE: malformed reference '${c..d}': expected a key after '.'\n" +
				"f.json:3:28: error: E_PARSE: malformed reference '${': unterminated '${' (expected '}')"},
		{"errors after an error", "${a b}\n ${1x} ${y[99999999999999999999]} ${{ z", at,
			"f.json:3:8: error: E_PARSE: malformed reference '${a b}': unexpected ' ' (expected '.', '[' or '}')\n" +
				"f.json:4:4: error: E_PARSE: malformed reference '${1x}': expected a name after '${', found '1x'\n" +
				"f.json:4:12: error: E_PARSE: malformed reference '${y[99999999999999999999]}': index '99999999999999999999' is too large\n" +
				"f.json:4:35: error: E_PARSE: unterminated '${{' in '${{ z': expected '}}'"},
		{"errors before an error", "${1x} ${a b}", at,
			"f.json:3:7: error: E_PARSE: malformed reference '${1x}': expected a name after '${', found '1x'\n" +
				"f.json:3:14: error: E_PARSE: malformed reference '${a b}': unexpected ' ' (expected '.', '[' or '}')"},
		{"long text cut", "${a " + strings.Repeat("x", 80) + "}", at,
			"f.json:3:8: error: E_PARSE: malformed reference '${a " + strings.Repeat("x", 56) + "...': unexpected ' ' (expected '.', '[' or '}')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tm, ds := ParseTemplate(tt.in, tt.pos)
			if got := showTemplate(tm, ds); got != tt.want {
				t.Errorf("ParseTemplate(%q) =\n%s\nwant\n%s", tt.in, got, tt.want)
			}
			for _, d := range ds {
				if d.Code != source.EParse || d.Severity != source.SevError {
					t.Errorf("ParseTemplate(%q) diagnostic %s, want an E_PARSE error", tt.in, d.Format())
				}
			}
		})
	}
}

// TestParseTemplateKeepsGoodRefs: with diagnostics, the template holds the
// text and the well-formed references around the malformed ones, each at
// its own position, so that a caller still checks them.
func TestParseTemplateKeepsGoodRefs(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"${x} ${VAR:-x} ${steps.S.output}", `ref(x@f.json:3:5) lit("  ") ref(steps.S.output@f.json:3:20)`},
		{"a ${1x} ${b}\n${c..d} ${e} ${f", `lit("a  ") ref(b@f.json:3:13) lit("\n ") ref(e@f.json:4:9) lit(" ")`},
		{"${a b}${c[99999999999999999999]}${d}", `ref(d@f.json:3:37)`},
	}
	for _, tt := range tests {
		tm, ds := ParseTemplate(tt.in, at)
		if len(ds) == 0 {
			t.Errorf("ParseTemplate(%q) gave no diagnostics", tt.in)
		}
		if got := showTemplate(tm, nil); got != tt.want {
			t.Errorf("ParseTemplate(%q) parts = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestTemplateAccessors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		literal string // Literal() when IsLiteral()
		isLit   bool
		whole   string // Whole().Raw, or "" when nil
		refs    string // Raw of each ref, comma-separated
		roots   string
	}{
		{"empty", "", "", true, "", "", ""},
		{"plain", "abc", "abc", true, "", "", ""},
		{"escapes", "a$$b${{c}}", "a$b${{c}}", true, "", "", ""},
		{"whole", "${for_each.items}", "", false, "for_each.items", "for_each.items", "for_each"},
		{"not whole", " ${x}", "", false, "", "x", "x"},
		{"two refs", "${steps.a.output}${context.k[1]}", "", false, "", "steps.a.output,context.k[1]", "steps,context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tm, ds := ParseTemplate(tt.in, at)
			if len(ds) > 0 {
				t.Fatalf("ParseTemplate(%q): %v", tt.in, ds)
			}
			if got := tm.IsLiteral(); got != tt.isLit {
				t.Errorf("ParseTemplate(%q).IsLiteral() = %v, want %v", tt.in, got, tt.isLit)
			}
			if tt.isLit {
				if got := tm.Literal(); got != tt.literal {
					t.Errorf("ParseTemplate(%q).Literal() = %q, want %q", tt.in, got, tt.literal)
				}
			}
			whole := ""
			if r := tm.Whole(); r != nil {
				whole = r.Raw
			}
			if whole != tt.whole {
				t.Errorf("ParseTemplate(%q).Whole() = %q, want %q", tt.in, whole, tt.whole)
			}
			var refs, roots []string
			for _, r := range tm.Refs() {
				refs = append(refs, r.Raw)
				roots = append(roots, r.Root())
			}
			if got := strings.Join(refs, ","); got != tt.refs {
				t.Errorf("ParseTemplate(%q).Refs() = %q, want %q", tt.in, got, tt.refs)
			}
			if got := strings.Join(roots, ","); got != tt.roots {
				t.Errorf("ParseTemplate(%q) roots = %q, want %q", tt.in, got, tt.roots)
			}
		})
	}
}

func TestTemplateRefPath(t *testing.T) {
	t.Parallel()
	tm, ds := ParseTemplate("${steps.S.json.files[2].name}", at)
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	got := fmt.Sprint(tm.Whole().Path)
	want := "[{steps 0 false} {S 0 false} {json 0 false} {files 0 false} { 2 true} {name 0 false}]"
	if got != want {
		t.Errorf("Path = %s, want %s", got, want)
	}
}

// TestTemplateFastPath checks that a string without '$' costs at most the
// one-part slice.
func TestTemplateFastPath(t *testing.T) {
	s := strings.Repeat("no references here ", 1000)
	allocs := testing.AllocsPerRun(100, func() {
		tm, _ := ParseTemplate(s, at)
		if len(tm.Parts) != 1 {
			panic("internal error: want one part")
		}
	})
	if allocs > 1 {
		t.Errorf("ParseTemplate without '$' made %v allocations, want at most 1", allocs)
	}
}

func TestParseRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"context", "context.flag", "context.flag @f.json:3:5"},
		{"json path", "steps.S.json.files[0]", "steps.S.json.files[0] @f.json:3:5"},
		{"wrapped", "${steps.S.output}", "steps.S.output @f.json:3:5"},
		{"canonical", "a[01]", "a[1] @f.json:3:5"},
		{"empty", "", "f.json:3:5: error: E_PARSE: malformed reference '': expected a name"},
		{"wrapped empty", "${}", "f.json:3:7: error: E_PARSE: malformed reference '${}': expected a name after '${'"},
		{"key expected", "steps.", "f.json:3:11: error: E_PARSE: malformed reference 'steps.': expected a key after '.'"},
		{"index expected", "a[x]", "f.json:3:7: error: E_PARSE: malformed reference 'a[x]': expected an integer index after '['"},
		{"bracket expected", "a[0", "f.json:3:8: error: E_PARSE: malformed reference 'a[0': expected ']' after the index"},
		{"space", "a b", "f.json:3:6: error: E_PARSE: malformed reference 'a b': unexpected ' ' (expected '.' or '[')"},
		{"digit root", "1x", "f.json:3:5: error: E_PARSE: malformed reference '1x': expected a name, found '1x'"},
		{"wrapped digit root", "${1x}", "f.json:3:7: error: E_PARSE: malformed reference '${1x}': expected a name after '${', found '1x'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, d := ParseRef(tt.in, at)
			got := ""
			if d != nil {
				got = d.Format()
			} else {
				got = r.Raw + " @" + r.Pos.String()
			}
			if got != tt.want {
				t.Errorf("ParseRef(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

// TestParseRefMatchesTemplate checks that an allow_missing_vars entry and
// a reference to the same value have the same Raw.
func TestParseRefMatchesTemplate(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"item", "steps.S.json.files[0]", "context.a.b", "env.HOME", "loop.total"} {
		r, d := ParseRef(raw, at)
		if d != nil {
			t.Fatalf("ParseRef(%q): %v", raw, d)
		}
		tm, ds := ParseTemplate("${"+raw+"}", at)
		if len(ds) > 0 || tm.Whole() == nil {
			t.Fatalf("ParseTemplate(%q): %v", raw, ds)
		}
		if r.Raw != tm.Whole().Raw {
			t.Errorf("ParseRef(%q).Raw = %q, template Raw = %q", raw, r.Raw, tm.Whole().Raw)
		}
	}
}

func ExampleParseAction() {
	pos := source.Pos{File: "workflows.json", Line: 12, Col: 22}
	a, _ := ParseAction("CALL:Node:Review", pos)
	fmt.Println(a.Kind, a.Target, a.TargetPos)
	a, _ = ParseAction("FAIL:review rejected: 3 issues", pos)
	fmt.Println(a.Kind, a.Msg)
	_, d := ParseAction("JUMPP:Fix", pos)
	fmt.Println(d.Format())
	// Output:
	// CALL Node:Review workflows.json:12:27
	// FAIL review rejected: 3 issues
	// workflows.json:12:22: error: E_BAD_ACTION: action 'JUMPP:Fix' is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL: (did you mean 'JUMP'?)
}

func ExampleParseTemplate() {
	pos := source.Pos{File: "flow.yaml", Line: 7, Col: 10}
	tm, _ := ParseTemplate("cp ${steps.list.json.files[0]} $$HOME/out", pos)
	for _, p := range tm.Parts {
		if p.Ref != nil {
			fmt.Printf("ref %s (root %s) at %s\n", p.Ref.Raw, p.Ref.Root(), p.Ref.Pos)
		} else {
			fmt.Printf("literal %q\n", p.Lit)
		}
	}
	_, ds := ParseTemplate("${steps.}", pos)
	fmt.Println(ds.Error())
	// Output:
	// literal "cp "
	// ref steps.list.json.files[0] (root steps) at flow.yaml:7:13
	// literal " $HOME/out"
	// flow.yaml:7:18: error: E_PARSE: malformed reference '${steps.}': expected a key after '.'
}

func TestTemplateDiagnosticLimit(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("${a b}", 50)
	_, ds := ParseTemplate(in, at)
	if len(ds) != maxTemplateDiags {
		t.Errorf("ParseTemplate(50 malformed references) gave %d diagnostics, want %d", len(ds), maxTemplateDiags)
	}
}

func BenchmarkParseTemplate(b *testing.B) {
	for _, bm := range []struct{ name, in string }{
		{"literal", strings.Repeat("plain text ", 20)},
		{"refs", "cp ${steps.list.json.files[0]} ${context.out}/${run.id}.txt"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				ParseTemplate(bm.in, at)
			}
		})
	}
}
