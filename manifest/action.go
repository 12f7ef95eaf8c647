package manifest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"smith/source"
)

// An ActionKind says what a transition's action does (CONTRACT 7.2).
type ActionKind uint8

// The actions. The zero ActionKind is not an action.
const (
	ActJump   ActionKind = iota + 1 // JUMP:Target
	ActCall                         // CALL:Target
	ActReturn                       // RETURN
	ActHalt                         // HALT_AND_FLAG
	ActEnd                          // END
	ActFail                         // FAIL:message
)

// actionNames are the keywords, indexed by ActionKind.
var actionNames = [...]string{
	ActJump:   "JUMP",
	ActCall:   "CALL",
	ActReturn: "RETURN",
	ActHalt:   "HALT_AND_FLAG",
	ActEnd:    "END",
	ActFail:   "FAIL",
}

// String returns the action's keyword ("JUMP", "HALT_AND_FLAG", ...).
func (k ActionKind) String() string {
	if k > 0 && int(k) < len(actionNames) {
		return actionNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// An Action is a parsed transition action.
type Action struct {
	Kind ActionKind
	// Target is the JUMP/CALL target as written, with its Node: or Block:
	// prefix if it has one; empty for the other kinds.
	Target string
	// Msg is the FAIL message: the text after the colon, leading white
	// space removed; never empty for ActFail, empty for the other kinds.
	Msg string
	// Pos is the position of the action's first character.
	Pos source.Pos
	// TargetPos is the position of the target's or message's first
	// character; the zero Pos for the kinds that take no argument.
	TargetPos source.Pos
}

// actionList is the list of valid forms, as messages print it.
const actionList = "JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL:"

// The action lexer. "FAIL:" switches to Msg, where the rest of the text
// is one token; any other ':' switches to Target. Bad matches any one
// character, so lexing never fails and every error is at a token.
// It is built at its first use, as the parser is.
var actionLexer = sync.OnceValue(func() *lexer.StatefulDefinition {
	return lexer.MustStateful(lexer.Rules{
		"Root": {
			{Name: "Fail", Pattern: `FAIL:`, Action: lexer.Push("Msg")},
			{Name: "Word", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
			{Name: "Colon", Pattern: `:`, Action: lexer.Push("Target")},
			{Name: "Bad", Pattern: `[\s\S]`},
		},
		"Msg": {
			{Name: "Text", Pattern: `[\s\S]+`},
		},
		"Target": {
			{Name: "Prefix", Pattern: `(?:Node|Block):`},
			{Name: "Ident", Pattern: `[A-Za-z0-9_.\-]+`},
			{Name: "Bad", Pattern: `[\s\S]`},
		},
	})
})

// actionAST is the participle grammar of an action:
//
//	"FAIL:" Text? | Word (":" Prefix? Ident?)?
//
// Which words are keywords, and which of them take an argument, is
// checked on the tree, so that those errors get their own messages.
type actionAST struct {
	Fail   *lexer.Token `parser:"(  @Fail"`
	Msg    *lexer.Token `parser:"   @Text?"`
	Word   *lexer.Token `parser:" | @Word"`
	Colon  *lexer.Token `parser:"   ( @Colon"`
	Prefix *lexer.Token `parser:"     @Prefix?"`
	Ident  *lexer.Token `parser:"     @Ident? )? )"`
}

// actionParser returns the compiled action grammar, built at its first use
// (most actions need only the fast path, fastpath.go).
var actionParser = sync.OnceValue(func() *participle.Parser[actionAST] {
	return participle.MustBuild[actionAST](participle.Lexer(actionLexer()))
})

// ParseAction parses a transition action (CONTRACT 7.2): JUMP:Target,
// CALL:Target, RETURN, HALT_AND_FLAG, END or FAIL:message. Keywords are
// case-sensitive; a target is an id of [A-Za-z0-9_.-] with an optional
// Node: or Block: prefix. White space around the action is ignored. pos is
// the position of the first character of s; the diagnostic (code
// E_BAD_ACTION) points at the offending character. On error the Action is
// the zero value.
func ParseAction(s string, pos source.Pos) (Action, *source.Diagnostic) {
	lo := len(s) - len(strings.TrimLeftFunc(s, unicode.IsSpace))
	text := strings.TrimRightFunc(s[lo:], unicode.IsSpace)
	base := lexer.Position{Line: 1, Column: 1}
	base.Advance(s[:lo])
	at := func(p lexer.Position) source.Pos { return grammarPos(pos, base, p) }
	if a, ok := fastAction(text, at); ok {
		return a, nil
	}
	return grammarAction(text, at)
}

// grammarAction is ParseAction's reading of text by the
// grammar, which defines the forms and words every error; at turns a
// position in text into one in the document.
func grammarAction(text string, at func(lexer.Position) source.Pos) (Action, *source.Diagnostic) {
	bad := func(p lexer.Position, format string, args ...any) (Action, *source.Diagnostic) {
		d := source.New(at(p), source.EBadAction, format, args...)
		return Action{}, &d
	}
	start := lexer.Position{Line: 1, Column: 1}
	if text == "" {
		return bad(start, "action %s is not one of %s", showText(text), actionList)
	}
	ast, err := actionParser().ParseString("", text)
	var errTok *lexer.Token // the token the grammar did not expect
	if err != nil {
		var ute *participle.UnexpectedTokenError
		if !errors.As(err, &ute) {
			var perr participle.Error
			if errors.As(err, &perr) {
				return bad(perr.Position(), "action %s: %s", showText(text), perr.Message())
			}
			return bad(start, "action %s: %s", showText(text), err)
		}
		errTok = &ute.Unexpected
	}
	if ast == nil {
		ast = &actionAST{}
	}
	after := func(t *lexer.Token) lexer.Position { // just past token t
		p := t.Pos
		p.Advance(t.Value)
		return p
	}

	if ast.Fail != nil {
		if ast.Msg == nil || strings.TrimSpace(ast.Msg.Value) == "" {
			return bad(after(ast.Fail), "action %s has no message", showText(text))
		}
		msg := strings.TrimLeftFunc(ast.Msg.Value, unicode.IsSpace)
		mp := ast.Msg.Pos
		mp.Advance(ast.Msg.Value[:len(ast.Msg.Value)-len(msg)])
		return Action{Kind: ActFail, Msg: msg, Pos: at(start), TargetPos: at(mp)}, nil
	}

	kind := ActionKind(0)
	if ast.Word != nil {
		for k := ActJump; k <= ActFail; k++ {
			if ast.Word.Value == actionNames[k] {
				kind = k
			}
		}
	}
	if kind == 0 {
		word := ""
		if ast.Word != nil {
			word = ast.Word.Value
		}
		return bad(start, "action %s is not one of %s%s", showText(text), actionList, suggestAction(word))
	}

	switch kind {
	case ActReturn, ActHalt, ActEnd:
		switch {
		case ast.Colon != nil:
			return bad(ast.Colon.Pos, "action %s takes no argument", showText(text))
		case errTok != nil:
			return bad(errTok.Pos, "action %s takes no argument", showText(text))
		}
		return Action{Kind: kind, Pos: at(start)}, nil
	}

	// JUMP, CALL, and FAIL without its colon.
	if ast.Colon == nil {
		if errTok != nil {
			return bad(errTok.Pos, "action %s: expected ':' after '%s', found %s",
				showText(text), kind, showText(errTok.Value))
		}
		if kind == ActFail {
			return bad(after(ast.Word), "action %s has no message", showText(text))
		}
		return bad(after(ast.Word), "action %s names no target", showText(text))
	}
	if errTok != nil {
		if errTok.EOF() && ast.Ident == nil {
			return bad(errTok.Pos, "action %s names no target", showText(text))
		}
		return bad(errTok.Pos, "action %s: unexpected %s in target (expected an id of letters, digits, '_', '.' or '-', with an optional Node: or Block: prefix)",
			showText(text), showText(errTok.Value))
	}
	if ast.Ident == nil {
		end := after(ast.Colon)
		if ast.Prefix != nil {
			end = after(ast.Prefix)
		}
		return bad(end, "action %s names no target", showText(text))
	}
	target, tp := ast.Ident.Value, ast.Ident.Pos
	if ast.Prefix != nil {
		target, tp = ast.Prefix.Value+target, ast.Prefix.Pos
	}
	return Action{Kind: kind, Target: target, Pos: at(start), TargetPos: at(tp)}, nil
}

// suggestAction returns " (did you mean 'K'?)" for the keyword nearest to
// word: the same word in another case, else the nearest by edit distance.
func suggestAction(word string) string {
	if word == "" {
		return ""
	}
	for _, k := range actionNames[ActJump:] {
		if strings.EqualFold(word, k) {
			return " (did you mean '" + k + "'?)"
		}
	}
	return source.DidYouMean(word, actionNames[ActJump:])
}
