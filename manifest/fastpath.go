package manifest

import (
	"strings"
	"unicode"

	"github.com/alecthomas/participle/v2/lexer"

	"smith/source"
)

// The fast paths below build, for the common well-formed strings, the very
// tree that the participle parsers would build (same tokens, types and
// positions), without running them: participle costs a few microseconds
// and many allocations per string, which dominated the compile time of
// large documents (bench/README.md). Anything unusual (escapes,
// passthroughs, indexes, errors of any kind) returns ok == false and goes
// to the grammar, which stays the definition; fastpath_test.go checks that
// both agree.

// Token types of the fast paths: the numbers the lexers give these rules
// (participle numbers the rules of a stateful lexer in the order of its
// sorted state names). They are written here, and TestFastTokenTypes
// checks them against the lexers, so that a document the fast paths read
// needs no lexer: building one compiles its regexps.
const (
	tokLit      lexer.TokenType = -20 // templateLexer "Lit"
	tokKey      lexer.TokenType = -12 // templateLexer "Key"
	tokRefOpen  lexer.TokenType = -18 // templateLexer "RefOpen"
	tokActFail  lexer.TokenType = -3  // actionLexer "Fail"
	tokActText  lexer.TokenType = -2  // actionLexer "Text"
	tokActWord  lexer.TokenType = -4  // actionLexer "Word"
	tokActColon lexer.TokenType = -5  // actionLexer "Colon"
	tokActPre   lexer.TokenType = -7  // actionLexer "Prefix"
	tokActIdent lexer.TokenType = -8  // actionLexer "Ident"
)

// fastTemplate parses s when it is literal text without '$' and
// references of the form ${key(.key)*}; otherwise ok is false.
func fastTemplate(s string) (ast *templateAST, ok bool) {
	ast = &templateAST{}
	pos := lexer.Position{Line: 1, Column: 1}
	tok := func(typ lexer.TokenType, v string) *lexer.Token {
		t := &lexer.Token{Type: typ, Value: v, Pos: pos}
		pos.Advance(v)
		return t
	}
	for len(s) > 0 {
		if i := strings.IndexByte(s, '$'); i != 0 {
			if i < 0 {
				i = len(s)
			}
			ast.Parts = append(ast.Parts, &partAST{Lit: tok(tokLit, s[:i])})
			s = s[i:]
			continue
		}
		if len(s) < 3 || s[1] != '{' || s[2] == '{' {
			return nil, false
		}
		ref := &refAST{Open: *tok(tokRefOpen, "${")}
		s = s[2:]
		n := keyLen(s)
		if n == 0 {
			return nil, false
		}
		ref.Path.Root = *tok(tokKey, s[:n])
		s = s[n:]
		for len(s) > 0 && s[0] == '.' {
			pos.Advance(".")
			s = s[1:]
			if n = keyLen(s); n == 0 {
				return nil, false
			}
			ref.Path.Elems = append(ref.Path.Elems, &elemAST{Key: tok(tokKey, s[:n])})
			s = s[n:]
		}
		if len(s) == 0 || s[0] != '}' {
			return nil, false
		}
		pos.Advance("}")
		s = s[1:]
		ast.Parts = append(ast.Parts, &partAST{Ref: ref})
	}
	return ast, true
}

// keyLen is the length of the Key token ([A-Za-z0-9_-]+) at the start of s.
func keyLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return i
		}
	}
	return len(s)
}

// fastAction reads text (an action with white space trimmed) when it is a
// well-formed FAIL:message, RETURN, HALT_AND_FLAG, END, or JUMP:/CALL:
// with a well-formed target, as the grammar reads it (grammarAction), but
// without building tokens; at turns a position in text into one in the
// document. Anything else, every error included, returns ok == false.
func fastAction(text string, at func(lexer.Position) source.Pos) (a Action, ok bool) {
	start := lexer.Position{Line: 1, Column: 1}
	switch {
	case strings.HasPrefix(text, "FAIL:"):
		msg := strings.TrimLeftFunc(text[len("FAIL:"):], unicode.IsSpace)
		if strings.TrimSpace(msg) == "" {
			return Action{}, false
		}
		tp := start
		tp.Advance(text[:len(text)-len(msg)])
		return Action{Kind: ActFail, Msg: msg, Pos: at(start), TargetPos: at(tp)}, true
	case text == "RETURN":
		return Action{Kind: ActReturn, Pos: at(start)}, true
	case text == "HALT_AND_FLAG":
		return Action{Kind: ActHalt, Pos: at(start)}, true
	case text == "END":
		return Action{Kind: ActEnd, Pos: at(start)}, true
	}
	word, target, found := strings.Cut(text, ":")
	kind := ActJump
	switch {
	case !found:
		return Action{}, false
	case word == "CALL":
		kind = ActCall
	case word != "JUMP":
		return Action{}, false
	}
	id := target
	for _, p := range [...]string{"Node:", "Block:"} {
		if strings.HasPrefix(id, p) {
			id = id[len(p):]
			break
		}
	}
	if id == "" || identLen(id) != len(id) {
		return Action{}, false
	}
	tp := start
	tp.Advance(text[:len(word)+1])
	return Action{Kind: kind, Target: target, Pos: at(start), TargetPos: at(tp)}, true
}

// identLen is the length of the Ident token ([A-Za-z0-9_.-]+) at the
// start of s.
func identLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return i
		}
	}
	return len(s)
}
