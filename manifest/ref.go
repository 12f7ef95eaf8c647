package manifest

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"smith/lang"
	"smith/source"
)

// The template lexer. In Root, "$$" is an escaped '$', "${{" opens a
// passthrough that ends at the first "}}" (state Pass), "${" opens a
// reference (state Ref) and any other '$' is literal. Bad and PassText
// match any one character, so lexing never fails and every error is a
// parse error at a token. (A single regexp for the whole passthrough would
// rescan to the end of the string at every unterminated "${{".)
// It is built at its first use, as the parsers are.
var templateLexer = sync.OnceValue(func() *lexer.StatefulDefinition {
	return lexer.MustStateful(lexer.Rules{
		"Root": {
			{Name: "Esc", Pattern: `\$\$`},
			{Name: "PassOpen", Pattern: `\$\{\{`, Action: lexer.Push("Pass")},
			{Name: "RefOpen", Pattern: `\$\{`, Action: lexer.Push("Ref")},
			{Name: "Dollar", Pattern: `\$`},
			{Name: "Lit", Pattern: `[^$]+`},
		},
		"Pass": {
			{Name: "PassClose", Pattern: `\}\}`, Action: lexer.Pop()},
			{Name: "PassText", Pattern: `[^}]+|\}`},
		},
		"Ref": {
			{Name: "RefClose", Pattern: `\}`, Action: lexer.Pop()},
			lexer.Include("Path"),
		},
		"Path":  refPathRules,
		"Index": refIndexRules,
	})
})

// The lexer of a bare path (allow_missing_vars entries).
var pathLexer = sync.OnceValue(func() *lexer.StatefulDefinition {
	return lexer.MustStateful(lexer.Rules{
		"Root":  {lexer.Include("Path")},
		"Path":  refPathRules,
		"Index": refIndexRules,
	})
})

var refPathRules = []lexer.Rule{
	{Name: "Key", Pattern: `[A-Za-z0-9_-]+`},
	{Name: "Dot", Pattern: `\.`},
	{Name: "LBrack", Pattern: `\[`, Action: lexer.Push("Index")},
	{Name: "Bad", Pattern: `[\s\S]`},
}

var refIndexRules = []lexer.Rule{
	{Name: "Int", Pattern: `[0-9]+`},
	{Name: "RBrack", Pattern: `\]`, Action: lexer.Pop()},
	{Name: "Bad", Pattern: `[\s\S]`},
}

// templateAST is the participle grammar of a template string.
type templateAST struct {
	Parts []*partAST `parser:"@@*"`
}

type partAST struct {
	Esc  *lexer.Token `parser:"  @Esc"`
	Pass *passAST     `parser:"| @@"`
	Ref  *refAST      `parser:"| @@"`
	Lit  *lexer.Token `parser:"| @(Lit | Dollar)"`
}

// passAST is a ${{...}} passthrough. Close is nil when it is unterminated,
// which buildTemplate reports.
type passAST struct {
	Open  lexer.Token  `parser:"@PassOpen PassText*"`
	Close *lexer.Token `parser:"@PassClose?"`
}

type refAST struct {
	Open lexer.Token `parser:"@RefOpen"`
	Path pathAST     `parser:"@@ RefClose"`
}

// pathAST is the grammar of a reference path: root (. key | [ int ])*.
type pathAST struct {
	Root  lexer.Token `parser:"@Key"`
	Elems []*elemAST  `parser:"@@*"`
}

type elemAST struct {
	Key   *lexer.Token `parser:"  Dot @Key"`
	Index *lexer.Token `parser:"| LBrack @Int RBrack"`
}

// The compiled parsers, built at their first use (most documents need only
// the fast paths, fastpath.go).
var (
	templateParser = sync.OnceValue(func() *participle.Parser[templateAST] {
		return participle.MustBuild[templateAST](participle.Lexer(templateLexer()))
	})
	pathParser = sync.OnceValue(func() *participle.Parser[pathAST] {
		return participle.MustBuild[pathAST](participle.Lexer(pathLexer()))
	})
)

// maxTemplateDiags bounds the malformed references reported for one
// string: each one costs a parse of the rest of the string.
const maxTemplateDiags = 10

// ParseTemplate splits s into literal text and ${...} references. pos is
// the position of the first character of s; every diagnostic (code
// E_PARSE) points into the file. Malformed references do not stop the
// scan: each one is reported, up to ten per string. When there are
// diagnostics, the Template holds what did parse: the literal text and
// the well-formed references, each at its own position, without the
// malformed ones, so that a caller can still check those references; it
// is not the string's meaning.
//
// A string without '$' is one literal part and never reaches the parser.
func ParseTemplate(s string, pos source.Pos) (lang.Template, source.Diagnostics) {
	if strings.IndexByte(s, '$') < 0 {
		if s == "" {
			return lang.Template{}, nil
		}
		return lang.Template{Parts: []lang.Part{{Lit: s}}}, nil
	}
	if ast, ok := fastTemplate(s); ok {
		return buildTemplate(s, ast, pos)
	}
	var (
		t     lang.Template
		diags source.Diagnostics
	)
	off, base := 0, lexer.Position{Line: 1, Column: 1}
	// part parses s[off:end], which holds no parse error, into t and diags.
	part := func(end int) {
		ast, err := templateParser().ParseString("", s[off:end])
		if err != nil {
			return // not expected: the parse error is reported anyway
		}
		pt, ds := buildTemplate(s[off:end], ast, grammarPos(pos, base, lexer.Position{Line: 1, Column: 1}))
		t.Parts = appendParts(t.Parts, pt.Parts)
		diags = append(diags, ds...)
	}
	for {
		ast, err := templateParser().ParseString("", s[off:])
		if err == nil {
			if off == 0 {
				return buildTemplate(s, ast, pos)
			}
			pt, ds := buildTemplate(s[off:], ast, grammarPos(pos, base, lexer.Position{Line: 1, Column: 1}))
			t.Parts = appendParts(t.Parts, pt.Parts)
			diags = append(diags, ds...)
			break
		}
		var bad source.Diagnostics
		start, next := templateError(&bad, s, off, base, pos, err)
		if start > off {
			part(start) // the references before the malformed one
		}
		diags = append(diags, bad...)
		if next < 0 || next <= off || len(diags) >= maxTemplateDiags {
			break
		}
		base.Advance(s[off:next])
		off = next
	}
	if len(diags) > maxTemplateDiags {
		diags = diags[:maxTemplateDiags]
	}
	return t, diags
}

// appendParts appends parts to out, merging a literal that meets another.
func appendParts(out, parts []lang.Part) []lang.Part {
	for _, p := range parts {
		if n := len(out); n > 0 && p.Ref == nil && out[n-1].Ref == nil {
			out[n-1].Lit += p.Lit
			continue
		}
		out = append(out, p)
	}
	return out
}

// buildTemplate turns a parsed template into parts, merging adjacent
// literal text, and reports roots that are not names and indexes too
// large for an int.
func buildTemplate(s string, ast *templateAST, pos source.Pos) (lang.Template, source.Diagnostics) {
	var (
		t     lang.Template
		diags source.Diagnostics
		lit   strings.Builder
		first string // the pending literal while it is a single token
		n     int    // literal tokens pending
	)
	flush := func() {
		switch n {
		case 0:
			return
		case 1:
			t.Parts = append(t.Parts, lang.Part{Lit: first})
		default:
			t.Parts = append(t.Parts, lang.Part{Lit: lit.String()})
		}
		lit.Reset()
		first, n = "", 0
	}
	addLit := func(v string) {
		if n == 1 {
			lit.WriteString(first)
		}
		if n == 0 {
			first = v
		} else {
			lit.WriteString(v)
		}
		n++
	}
	for _, p := range ast.Parts {
		switch {
		case p.Esc != nil:
			addLit("$")
		case p.Pass != nil:
			if p.Pass.Close == nil {
				start := p.Pass.Open.Pos.Offset
				diags.Add(grammarPos(pos, lexer.Position{Line: 1, Column: 1}, p.Pass.Open.Pos), source.EParse,
					"unterminated '${{' in %s: expected '}}'", showText(s[start:]))
				continue
			}
			addLit(s[p.Pass.Open.Pos.Offset : p.Pass.Close.Pos.Offset+len(p.Pass.Close.Value)])
		case p.Lit != nil:
			addLit(p.Lit.Value)
		case p.Ref != nil:
			ref, d := buildRef(&p.Ref.Path, pos, lexer.Position{Line: 1, Column: 1}, "${", s, p.Ref.Open.Pos.Offset)
			if d != nil {
				diags = append(diags, *d)
				continue
			}
			flush()
			ref.Pos = grammarPos(pos, lexer.Position{Line: 1, Column: 1}, p.Ref.Open.Pos)
			t.Parts = append(t.Parts, lang.Part{Ref: ref})
		}
	}
	flush()
	return t, diags
}

// buildRef checks a parsed path and makes its Ref. s[start:] is the text
// of the reference (for messages), open is "${" in templates.
func buildRef(p *pathAST, pos source.Pos, base lexer.Position, open, s string, start int) (*lang.Ref, *source.Diagnostic) {
	if r, _ := utf8.DecodeRuneInString(p.Root.Value); r != '_' && !isASCIILetter(r) {
		d := source.New(grammarPos(pos, base, p.Root.Pos), source.EParse,
			"malformed reference %s: %s, found '%s'",
			showText(refText(s, start)), pathReason("", open, lexer.Token{}, false), p.Root.Value)
		return nil, &d
	}
	ref := &lang.Ref{Path: make([]lang.PathElem, 0, 1+len(p.Elems))}
	ref.Path = append(ref.Path, lang.PathElem{Key: p.Root.Value})
	raw := p.Root.Value
	if len(p.Elems) > 0 {
		var b strings.Builder
		b.WriteString(p.Root.Value)
		for _, e := range p.Elems {
			if e.Key != nil {
				ref.Path = append(ref.Path, lang.PathElem{Key: e.Key.Value})
				b.WriteByte('.')
				b.WriteString(e.Key.Value)
				continue
			}
			i, err := strconv.Atoi(e.Index.Value)
			if err != nil {
				d := source.New(grammarPos(pos, base, e.Index.Pos), source.EParse,
					"malformed reference %s: index '%s' is too large",
					showText(refText(s, start)), e.Index.Value)
				return nil, &d
			}
			ref.Path = append(ref.Path, lang.PathElem{Index: i, IsIndex: true})
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(i))
			b.WriteByte(']')
		}
		raw = b.String()
	}
	ref.Raw = raw
	return ref, nil
}

// templateError records the diagnostic for a parse error in s[off:] and
// returns the offset of the malformed reference's "${" (-1 when unknown)
// and the offset at which to resume parsing (-1 to stop). The
// template grammar finds the reference at fault; its path is then parsed
// alone, which pins the error on the exact character.
func templateError(diags *source.Diagnostics, s string, off int, base lexer.Position, pos source.Pos, err error) (start, next int) {
	var perr participle.Error
	if !errors.As(err, &perr) {
		diags.Add(grammarPos(pos, base, lexer.Position{Line: 1, Column: 1}), source.EParse,
			"malformed template %s: %s", showText(s[off:]), err)
		return -1, -1
	}
	at := min(off+perr.Position().Offset, len(s))
	var tok lexer.Token
	var ute *participle.UnexpectedTokenError
	if errors.As(err, &ute) {
		tok = ute.Unexpected
	}
	start = at
	if tok.Type != tokRefOpen {
		start = strings.LastIndex(s[:at], "${")
	}
	if start < off {
		diags.Add(grammarPos(pos, base, perr.Position()), source.EParse,
			"malformed template %s: %s", showText(s[off:]), perr.Message())
		return -1, -1
	}
	open := base
	open.Advance(s[off:start])
	text := refText(s, start)
	if !strings.HasSuffix(text, "}") {
		diags.Add(grammarPos(pos, open, lexer.Position{Line: 1, Column: 1}), source.EParse,
			"malformed reference %s: unterminated '${' (expected '}')", showText(text))
		return start, -1
	}
	next = start + len(text)
	path := text[2 : len(text)-1]
	_, err = pathParser().ParseString("", path)
	if !errors.As(err, &perr) {
		// The path alone parses: report what the template grammar saw.
		diags.Add(grammarPos(pos, base, perr.Position()), source.EParse,
			"malformed reference %s: unexpected %s%s", showText(text), showText(tok.Value), shellHint(text))
		return start, next
	}
	tok = lexer.Token{}
	if errors.As(err, &ute) {
		tok = ute.Unexpected
	}
	open.Advance("${")
	diags.Add(grammarPos(pos, open, perr.Position()), source.EParse,
		"malformed reference %s: %s%s", showText(text), pathReason(path[:min(perr.Position().Offset, len(path))], "${", tok, true), shellHint(text))
	return start, next
}

// pathReason says what is wrong when tok follows the path text before.
// open is how the path began ("${", or "" for a bare path).
func pathReason(before, open string, tok lexer.Token, closed bool) string {
	switch {
	case before == "":
		if open == "" {
			return "expected a name"
		}
		return "expected a name after '" + open + "'"
	case strings.HasSuffix(before, "."):
		return "expected a key after '.'"
	case strings.HasSuffix(before, "["):
		return "expected an integer index after '['"
	case strings.HasSuffix(strings.TrimRight(before, "0123456789"), "["):
		return "expected ']' after the index"
	case closed:
		return "unexpected " + showText(tok.Value) + " (expected '.', '[' or '}')"
	}
	return "unexpected " + showText(tok.Value) + " (expected '.' or '[')"
}

// refText is the text of the reference that starts at s[start:]: up to and
// including the first '}', or the rest of s.
func refText(s string, start int) string {
	if end := strings.IndexByte(s[start:], '}'); end >= 0 {
		return s[start : start+end+1]
	}
	return s[start:]
}

// ParseRef parses a bare reference path such as "context.flag" or
// "steps.S.json.files[0]" (an allow_missing_vars entry); the ${...} form is
// accepted too. pos is the position of raw's first character. Errors have
// code E_PARSE.
func ParseRef(raw string, pos source.Pos) (*lang.Ref, *source.Diagnostic) {
	s, open, base := raw, "", lexer.Position{Line: 1, Column: 1}
	if strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") && !strings.HasPrefix(s, "${{") {
		s, open = s[2:len(s)-1], "${"
		base.Advance(open)
	}
	ast, err := pathParser().ParseString("", s)
	if err != nil {
		var perr participle.Error
		if !errors.As(err, &perr) {
			d := source.New(pos, source.EParse, "malformed reference %s: %s", showText(raw), err)
			return nil, &d
		}
		var tok lexer.Token
		var ute *participle.UnexpectedTokenError
		if errors.As(err, &ute) {
			tok = ute.Unexpected
		}
		at := perr.Position().Offset
		if at > len(s) {
			at = len(s)
		}
		d := source.New(grammarPos(pos, base, perr.Position()), source.EParse,
			"malformed reference %s: %s", showText(raw), pathReason(s[:at], open, tok, false))
		return nil, &d
	}
	ref, d := buildRef(ast, pos, base, open, raw, 0)
	if d != nil {
		return nil, d
	}
	ref.Pos = pos
	return ref, nil
}

// grammarPos maps a participle position p, relative to a substring that
// begins at base within the string, into the file: pos is the position
// of the string's first character.
func grammarPos(pos source.Pos, base, p lexer.Position) source.Pos {
	q := base.Add(p)
	return pos.Shift(q.Line, q.Column)
}

// showText quotes input text for a message: in single quotes, with control
// characters escaped and anything past 60 characters cut to "...".
func showText(s string) string {
	const max = 60
	var b strings.Builder
	b.WriteByte('\'')
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("...")
			break
		}
		n++
		switch {
		case r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ':
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func isASCIILetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }

// shellSyntax matches the shell's parameter expansions: ${VAR:-x},
// ${VAR=x}, ${VAR:+x}, ${VAR?x}, ${#VAR}, ${!VAR}, ${VAR#p}, ${VAR%p},
// ${VAR/a/b}, ${VAR^}, ${VAR,}, ${VAR:0:2}.
var shellSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\$\{([#!][A-Za-z_]|[A-Za-z_][A-Za-z0-9_]*(:?[-=+?]|[#%/^,]|:[0-9 ]))`)
})

// shellHint explains a reference written in shell syntax (${VAR:-x},
// ${#VAR}, ${VAR%.txt}): Smith reads every ${...} itself.
func shellHint(text string) string {
	if !shellSyntax().MatchString(text) {
		return ""
	}
	return fmt.Sprintf("; this looks like shell syntax, which Smith does not evaluate: to leave it to a shell write $%s (Smith turns $$ into $); for a default value, list the reference in allow_missing_vars", text)
}
