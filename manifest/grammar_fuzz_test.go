package manifest

import (
	"strings"
	"testing"

	"smith/lang"
	"smith/source"
)

var fuzzPos = source.Pos{File: "fuzz.json", Line: 2, Col: 7}

func FuzzParseAction(f *testing.F) {
	for _, s := range []string{
		"JUMP:Block:Feature_Implement__GenerateCode", "CALL:Node:Review", "JUMP:x.y-z",
		"RETURN", "HALT_AND_FLAG", "END", "FAIL:boom: at 3", "FAIL:", "FAIL", "JUMP:",
		"JUMPP:X", "jump:x", "RETURN:X", "JUMP:a b", "JUMP:Node:", " \n END \t", ":",
		"JUMP:Node:Block:X", "FAIL:\n", "\xff", "CALL:é", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, d := ParseAction(s, fuzzPos)
		if d != nil {
			if d.Code != source.EBadAction || !d.Pos.IsValid() || d.Msg == "" {
				t.Fatalf("ParseAction(%q) diagnostic %s, want a positioned E_BAD_ACTION", s, d.Format())
			}
			return
		}
		if a.Kind < ActJump || a.Kind > ActFail || !a.Pos.IsValid() {
			t.Fatalf("ParseAction(%q) = %+v, want a kind and a position", s, a)
		}
		// Printing the action back and parsing it again gives the same action.
		text := a.Kind.String()
		switch a.Kind {
		case ActJump, ActCall:
			text += ":" + a.Target
		case ActFail:
			text += ":" + a.Msg
		}
		b, d := ParseAction(text, fuzzPos)
		if d != nil || b.Kind != a.Kind || b.Target != a.Target || b.Msg != a.Msg {
			t.Fatalf("ParseAction(%q) = %+v, reparsed %q = %+v, %v", s, a, text, b, d)
		}
	})
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{
		"", "plain", "${item}", "a ${loop.index} b", "${steps.S.json.result.files[0]}",
		"$$", "$", "$$${x}", "${{ github.sha }}", "${{ a }}}", "${{ x", "${", "${}", "${ x}",
		"${a[x]}", "${a[0}", "${a..b}", "${1a}", "x\n${y.}", "${a[99999999999999999999]}",
		"${a}${b}$$c", "$${{x}}", "$$$${{a}}", "${{a}}${b}", "\xff${\xfe}", "${a.b c} ${d..e}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, ds := ParseTemplate(s, fuzzPos)
		for i, p := range tm.Parts {
			if (p.Ref == nil) == (p.Lit == "") {
				t.Fatalf("ParseTemplate(%q) part %d = %+v, want exactly one of Lit and Ref", s, i, p)
			}
			if i > 0 && p.Ref == nil && tm.Parts[i-1].Ref == nil {
				t.Fatalf("ParseTemplate(%q) has adjacent literal parts", s)
			}
			if p.Ref != nil && !p.Ref.Pos.IsValid() {
				t.Fatalf("ParseTemplate(%q) reference %s has no position", s, p.Ref.Raw)
			}
		}
		if len(ds) > 0 {
			for _, d := range ds {
				if d.Code != source.EParse || !d.Pos.IsValid() {
					t.Fatalf("ParseTemplate(%q) diagnostic %s, want a positioned E_PARSE", s, d.Format())
				}
			}
			return
		}
		text := renderTemplate(tm)
		again, ds := ParseTemplate(text, fuzzPos)
		if len(ds) > 0 {
			t.Fatalf("ParseTemplate(%q) rendered as %q: %v", s, text, ds)
		}
		if got, want := showParts(again), showParts(tm); got != want {
			t.Fatalf("ParseTemplate(%q) = %s, rendered %q parses as %s", s, want, text, got)
		}
	})
}

// renderTemplate prints a template back: literal '$' as "$$" except inside
// a ${{...}} passthrough, references as ${Raw}.
func renderTemplate(tm lang.Template) string {
	var b strings.Builder
	for _, p := range tm.Parts {
		if p.Ref != nil {
			b.WriteString("${" + p.Ref.Raw + "}")
			continue
		}
		lit := p.Lit
		for lit != "" {
			if strings.HasPrefix(lit, "${{") {
				if end := strings.Index(lit[3:], "}}"); end >= 0 {
					b.WriteString(lit[:3+end+2])
					lit = lit[3+end+2:]
					continue
				}
			}
			if lit[0] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(lit[0])
			}
			lit = lit[1:]
		}
	}
	return b.String()
}

// showParts prints parts without positions.
func showParts(tm lang.Template) string {
	var b strings.Builder
	for _, p := range tm.Parts {
		if p.Ref != nil {
			b.WriteString("${" + p.Ref.Raw + "}|")
			for _, e := range p.Ref.Path {
				if e.IsIndex {
					b.WriteString("[i]")
				} else {
					b.WriteString("[k" + e.Key + "]")
				}
			}
		} else {
			b.WriteString("lit:" + p.Lit)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
