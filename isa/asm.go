package isa

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"smith/lang"
	"smith/source"
)

// The assembly lexer. A comment runs from ';' to the end of the line or to
// an '@' outside a quoted string, so that an instruction's comment column
// can precede its position. '@' switches to Pos for one position (a file
// name, bare or quoted, then :LINE:COL; or "-"). A '{' or '[' starts a JSON
// text that runs to the end of the line. Bad matches any other character,
// so lexing never fails and every error is at a token.
// It is built at its first use, as the parser is.
var asmLexer = sync.OnceValue(func() *lexer.StatefulDefinition {
	return lexer.MustStateful(lexer.Rules{
		"Root": {
			{Name: "Header", Pattern: `; smith program, isa -?[0-9]+`},
			{Name: "Comment", Pattern: `;(?:"(?:[^"\\\n]|\\.)*"|[^"@\n])*`},
			{Name: "At", Pattern: `@`, Action: lexer.Push("Pos")},
			{Name: "String", Pattern: `"(?:[^"\\\n]|\\.)*"`},
			{Name: "JSON", Pattern: `[{\[][^\n]*`},
			{Name: "Int", Pattern: `[0-9]+`},
			{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
			{Name: "Punct", Pattern: `[=(),:]`},
			{Name: "EOL", Pattern: `\n`},
			{Name: "Space", Pattern: `[ \t\r]+`},
			{Name: "Bad", Pattern: `[\s\S]`},
		},
		"Pos": {
			{Name: "Space", Pattern: `[ \t\r]+`},
			{Name: "PosVal", Pattern: `(?:"(?:[^"\\\n]|\\.)*"|[^\s";@]+):-?[0-9]+:-?[0-9]+|-`, Action: lexer.Pop()},
			{Name: "Bad", Pattern: `[\s\S]`},
		},
	})
})

// asmFile is the grammar of a listing: lines, each empty (a comment alone
// is elided) or one statement.
type asmFile struct {
	Lines []*asmLine `parser:"( EOL | @@ EOL )*"`
}

// asmLine is one statement. Lines that continue a pool entry (memory,
// spec, transition entries) are statements of their own; Assemble attaches
// them to the entry before them.
type asmLine struct {
	Pos     lexer.Position
	Header  *headerTok  `parser:"  @@"`
	Program *asmProgram `parser:"| 'program' @@"`
	String  *asmString  `parser:"| 'string' @@"`
	Tmpl    *asmTmpl    `parser:"| 'template' @@"`
	Node    *asmNode    `parser:"| 'node' @@"`
	Block   *asmBlock   `parser:"| 'block' @@"`
	Memory  *memTok     `parser:"| 'memory' @@"`
	Spec    *jsonTok    `parser:"| 'spec' @@"`
	Table   *asmTable   `parser:"| 'table' @@"`
	Entry   *asmEntry   `parser:"| @@"`
	Data    *jsonTok    `parser:"| 'data' @@"`
	Instr   *asmInstr   `parser:"| @@"`
}

// program NAME format FORMAT source SOURCE entry PC
type asmProgram struct {
	Name   strTok `parser:"@@"`
	Format strTok `parser:"'format' @@"`
	Source strTok `parser:"'source' @@"`
	Entry  intTok `parser:"'entry' @@"`
}

// string INDEX TEXT
type asmString struct {
	Index intTok `parser:"@@"`
	Text  strTok `parser:"@@"`
}

// template INDEX JSON
type asmTmpl struct {
	Index intTok  `parser:"@@"`
	Text  jsonTok `parser:"@@"`
}

// node INDEX ID entry BLOCK inherit=BOOL @ POS, or a code group header:
// node ID (entry PC):
type asmNode struct {
	Pool  *asmPoolNode `parser:"  @@"`
	Group *asmGroup    `parser:"| @@"`
}

type asmPoolNode struct {
	Index   intTok `parser:"@@"`
	ID      strTok `parser:"@@"`
	Entry   intTok `parser:"'entry' @@"`
	Inherit string `parser:"'inherit' '=' @('true' | 'false')"`
	Where   posTok `parser:"At @@"`
}

type asmGroup struct {
	ID    strTok  `parser:"@@"`
	Entry *intTok `parser:"( '(' 'entry' @@ ')' )? ':'"`
}

// block INDEX ID KIND node NODE start PC dispatch PC @ POS
type asmBlock struct {
	Index    intTok   `parser:"@@"`
	ID       strTok   `parser:"@@"`
	Kind     identTok `parser:"@@"`
	Node     intTok   `parser:"'node' @@"`
	Start    intTok   `parser:"'start' @@"`
	Dispatch intTok   `parser:"'dispatch' @@"`
	Where    posTok   `parser:"At @@"`
}

// table INDEX block BLOCK [default PC]
type asmTable struct {
	Index   intTok  `parser:"@@"`
	Block   intTok  `parser:"'block' @@"`
	Default *intTok `parser:"( 'default' @@ )?"`
}

// SIGNAL PC (a transition of the table before it)
type asmEntry struct {
	Signal strTok `parser:"@@"`
	PC     intTok `parser:"@@"`
}

// PC MNEMONIC [A [, B]] @ POS
type asmInstr struct {
	PC    intTok   `parser:"@@"`
	Op    identTok `parser:"@@"`
	Args  []intTok `parser:"( @@ ( ',' @@ )? )?"`
	Where posTok   `parser:"At @@"`
}

// tokNames replaces the names of the token structs in participle's
// messages with words.
var tokNames = strings.NewReplacer(
	"HeaderTok", "the header",
	"IntTok", "a number",
	"StrTok", "a quoted string",
	"IdentTok", "a name",
	"JsonTok", "JSON text",
	"MemTok", "JSON text or a quoted string",
	"PosTok", "a position (FILE:LINE:COL or -)",
)

// A tok is a token's text and position; each kind of token below converts
// to it.
type tok struct {
	Pos   lexer.Position
	Value string
}

// Tokens with their positions. (participle captures into a lexer.Token
// the elided token before it, so each kind of token is a struct.)
type (
	headerTok struct {
		Pos   lexer.Position
		Value string `parser:"@Header"`
	}
	intTok struct {
		Pos   lexer.Position
		Value string `parser:"@Int"`
	}
	strTok struct {
		Pos   lexer.Position
		Value string `parser:"@String"`
	}
	identTok struct {
		Pos   lexer.Position
		Value string `parser:"@Ident"`
	}
	jsonTok struct {
		Pos   lexer.Position
		Value string `parser:"@JSON"`
	}
	memTok struct {
		Pos   lexer.Position
		Value string `parser:"@(JSON | String)"`
	}
	posTok struct {
		Pos   lexer.Position
		Value string `parser:"@PosVal"`
	}
)

// asmParser returns the compiled grammar, built at its first use (not at
// package initialisation: smithvm never assembles).
var asmParser = sync.OnceValue(func() *participle.Parser[asmFile] {
	return participle.MustBuild[asmFile](
		participle.Lexer(asmLexer()),
		participle.Elide("Comment", "Space"),
	)
})

// An assembler holds the state of one Assemble call.
type assembler struct {
	name  string
	p     *Program
	diags source.Diagnostics
	// Where each entry was written, for verification faults.
	progAt                    source.Pos
	codeAt, nodeAt, blockAt   []source.Pos
	tableAt                   []source.Pos
	sawHeader, sawProg, sawDt bool
	noHeader                  bool // the missing header was reported
}

// Assemble reads assembly text, as Disassemble writes it, into a Program.
// name is the file name diagnostics use. The text must start with the
// header line of this isa version; comments (';' to the end of the line or
// to the '@' of a position) and blank lines are ignored. Every error is an
// E_PARSE diagnostic at its line and column of the text, including
// operands and pool entries that fail verification; the program returned
// passes Verify and is canonical (no empty non-nil slices).
func Assemble(name string, r io.Reader) (*Program, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(src) == 0 || src[len(src)-1] != '\n' {
		src = append(src, '\n')
	}
	a := &assembler{name: name, p: &Program{}}
	file, err := asmParser().ParseBytes(name, src)
	if err != nil {
		var perr participle.Error
		if errors.As(err, &perr) {
			a.errorf(perr.Position(), "%s", tokNames.Replace(perr.Message()))
		} else {
			a.errorf(lexer.Position{Line: 1, Column: 1}, "%v", err)
		}
		return nil, a.diags
	}
	for i, l := range file.Lines {
		var prev *asmLine
		if i > 0 {
			prev = file.Lines[i-1]
		}
		a.line(l, prev)
	}
	if !a.sawHeader && !a.noHeader {
		a.errorf(lexer.Position{Line: 1, Column: 1}, "the text does not start with '%s'", strings.TrimSpace(fmt.Sprintf(headerFormat, Version)))
	}
	if !a.sawProg && a.sawHeader {
		a.errorf(lexer.Position{Line: 1, Column: 1}, "the text has no 'program' line")
	}
	if len(a.diags) > 0 {
		a.diags.Sort()
		return nil, a.diags
	}
	for _, f := range a.p.verify() {
		var at source.Pos
		switch f.pool {
		case "code":
			at = a.codeAt[f.idx]
		case "nodes":
			at = a.nodeAt[f.idx]
		case "blocks":
			at = a.blockAt[f.idx]
		case "tables":
			at = a.tableAt[f.idx]
		default:
			at = a.progAt
		}
		d := source.New(at, source.EParse, "%s", f.msg)
		d.Path = f.path
		a.diags = append(a.diags, d)
	}
	if len(a.diags) > 0 {
		a.diags.Sort()
		return nil, a.diags
	}
	canonicalize(reflect.ValueOf(a.p))
	return a.p, nil
}

func (a *assembler) at(p lexer.Position) source.Pos {
	return source.Pos{File: a.name, Line: p.Line, Col: p.Column}
}

func (a *assembler) errorf(p lexer.Position, format string, args ...any) {
	a.diags.Add(a.at(p), source.EParse, format, args...)
}

// line assembles one statement; prev is the statement before it.
func (a *assembler) line(l, prev *asmLine) {
	p := a.p
	if l.Header == nil && !a.sawHeader {
		if !a.noHeader {
			a.errorf(l.Pos, "the text does not start with '%s'", strings.TrimSpace(fmt.Sprintf(headerFormat, Version)))
			a.noHeader = true
		}
		return
	}
	switch {
	case l.Header != nil:
		if a.sawHeader {
			a.errorf(l.Pos, "duplicate header line")
			return
		}
		a.sawHeader = true
		var v int
		if _, err := fmt.Sscanf(l.Header.Value, "; smith program, isa %d", &v); err != nil || v != Version {
			a.errorf(l.Pos, "the text is isa version %s, this smith reads version %d",
				strings.TrimPrefix(l.Header.Value, "; smith program, isa "), Version)
		}
	case l.Program != nil:
		if a.sawProg {
			a.errorf(l.Pos, "duplicate 'program' line")
			return
		}
		a.sawProg, a.progAt = true, a.at(l.Pos)
		p.Name = a.str(tok(l.Program.Name))
		p.Format = a.str(tok(l.Program.Format))
		p.Source = a.str(tok(l.Program.Source))
		p.Entry = a.num(tok(l.Program.Entry))
	case l.String != nil:
		a.index(tok(l.String.Index), "string", len(p.Strings))
		p.Strings = append(p.Strings, a.str(tok(l.String.Text)))
	case l.Tmpl != nil:
		a.index(tok(l.Tmpl.Index), "template", len(p.Templates))
		var t lang.Template
		a.json(tok(l.Tmpl.Text), &t)
		p.Templates = append(p.Templates, t)
	case l.Node != nil && l.Node.Pool != nil:
		n := l.Node.Pool
		a.index(tok(n.Index), "node", len(p.Nodes))
		p.Nodes = append(p.Nodes, Node{ID: a.str(tok(n.ID)), Entry: a.num(tok(n.Entry)), Inherit: n.Inherit == "true", Pos: a.pos(tok(n.Where))})
		a.nodeAt = append(a.nodeAt, a.at(l.Pos))
	case l.Node != nil:
		// A code group header: derived from the pools, nothing to assemble.
	case l.Block != nil:
		b := l.Block
		a.index(tok(b.Index), "block", len(p.Blocks))
		kind, ok := KindByName(b.Kind.Value)
		if !ok {
			a.errorf(b.Kind.Pos, "block kind '%s' is not one of %s%s",
				b.Kind.Value, strings.Join(KindNames(), ", "), source.DidYouMean(b.Kind.Value, KindNames()))
		}
		p.Blocks = append(p.Blocks, Block{ID: a.str(tok(b.ID)), Kind: kind, Node: a.num(tok(b.Node)),
			Start: a.num(tok(b.Start)), Dispatch: a.num(tok(b.Dispatch)), Pos: a.pos(tok(b.Where))})
		a.blockAt = append(a.blockAt, a.at(l.Pos))
	case l.Memory != nil:
		if prev == nil || prev.Node == nil || prev.Node.Pool == nil || len(p.Nodes) == 0 {
			a.errorf(l.Pos, "'memory' must follow a node line")
			return
		}
		n := &p.Nodes[len(p.Nodes)-1]
		if strings.HasPrefix(l.Memory.Value, `"`) {
			n.StaticMemory = a.str(tok(*l.Memory))
		} else {
			n.StaticMemory = strings.TrimRight(l.Memory.Value, " \t\r")
		}
	case l.Spec != nil:
		if prev == nil || prev.Block == nil || len(p.Blocks) == 0 {
			a.errorf(l.Pos, "'spec' must follow a block line")
			return
		}
		var s blockSpec
		a.json(tok(*l.Spec), &s)
		s.apply(&p.Blocks[len(p.Blocks)-1])
	case l.Table != nil:
		t := l.Table
		a.index(tok(t.Index), "table", len(p.Tables))
		tb := Table{Block: a.num(tok(t.Block))}
		if t.Default != nil {
			tb.Default, tb.HasDefault = a.num(tok(*t.Default)), true
		}
		p.Tables = append(p.Tables, tb)
		a.tableAt = append(a.tableAt, a.at(l.Pos))
	case l.Entry != nil:
		if prev == nil || (prev.Table == nil && prev.Entry == nil) || len(p.Tables) == 0 {
			a.errorf(l.Pos, "a transition entry must follow a table line")
			return
		}
		t := &p.Tables[len(p.Tables)-1]
		t.Entries = append(t.Entries, TableEntry{Signal: a.str(tok(l.Entry.Signal)), PC: a.num(tok(l.Entry.PC))})
	case l.Data != nil:
		if a.sawDt {
			a.errorf(l.Pos, "duplicate 'data' line")
			return
		}
		a.sawDt = true
		var d runData
		a.json(tok(*l.Data), &d)
		d.apply(p)
	case l.Instr != nil:
		a.instr(l)
	}
}

// instr assembles one instruction line.
func (a *assembler) instr(l *asmLine) {
	in := l.Instr
	p := a.p
	a.index(tok(in.PC), "instruction", len(p.Code))
	op, ok := OpByName(in.Op.Value)
	if !ok || op == OpInvalid {
		names := make([]string, 0, NumOps)
		for o := Op(1); int(o) < NumOps; o++ {
			names = append(names, o.String())
		}
		a.errorf(in.Op.Pos, "'%s' is not an instruction%s", in.Op.Value, source.DidYouMean(in.Op.Value, names))
	}
	info, _ := op.Info()
	want := 0
	for _, k := range []Operand{info.A, info.B} {
		if k != NoOperand {
			want++
		}
	}
	var args [2]uint32
	for i, t := range in.Args {
		args[i] = a.num(tok(t))
	}
	if ok && len(in.Args) != want {
		switch want {
		case 0:
			a.errorf(in.Op.Pos, "%s takes no operand, found %d", info.Name, len(in.Args))
		case 1:
			a.errorf(in.Op.Pos, "%s takes 1 operand (%s), found %d", info.Name, info.A, len(in.Args))
		default:
			a.errorf(in.Op.Pos, "%s takes 2 operands (%s, %s), found %d", info.Name, info.A, info.B, len(in.Args))
		}
	}
	p.Code = append(p.Code, Instr{Op: op, A: args[0], B: args[1]})
	p.Pos = append(p.Pos, a.pos(tok(in.Where)))
	a.codeAt = append(a.codeAt, a.at(l.Pos))
}

// index checks that a pool entry's index is the next one.
func (a *assembler) index(t tok, what string, next int) {
	if v, err := strconv.ParseUint(t.Value, 10, 32); err != nil || v != uint64(next) {
		if what == "instruction" {
			a.errorf(t.Pos, "instruction at pc %s is out of order: the next pc is %04d", t.Value, next)
			return
		}
		a.errorf(t.Pos, "%s %s is out of order: the next %s is %d", what, t.Value, what, next)
	}
}

// num reads a uint32 operand or index.
func (a *assembler) num(t tok) uint32 {
	v, err := strconv.ParseUint(t.Value, 10, 32)
	if err != nil {
		a.errorf(t.Pos, "number %s does not fit in 32 bits", t.Value)
	}
	return uint32(v)
}

// str reads a Go-quoted string.
func (a *assembler) str(t tok) string {
	s, err := strconv.Unquote(t.Value)
	if err != nil {
		a.errorf(t.Pos, "bad string %s", t.Value)
	}
	return s
}

// pos reads a position: "-", or FILE:LINE:COL with FILE bare or quoted.
func (a *assembler) pos(t tok) source.Pos {
	if t.Value == "-" {
		return source.Pos{}
	}
	i := strings.LastIndexByte(t.Value, ':')
	j := strings.LastIndexByte(t.Value[:i], ':')
	line, err1 := strconv.Atoi(t.Value[j+1 : i])
	col, err2 := strconv.Atoi(t.Value[i+1:])
	if err1 != nil || err2 != nil {
		a.errorf(t.Pos, "bad position %s", t.Value)
		return source.Pos{}
	}
	file := t.Value[:j]
	if strings.HasPrefix(file, `"`) {
		s, err := strconv.Unquote(file)
		if err != nil {
			a.errorf(t.Pos, "bad position %s", t.Value)
		}
		file = s
	}
	return source.Pos{File: file, Line: line, Col: col}
}

// json decodes a JSON text token into v, refusing unknown fields.
func (a *assembler) json(t tok, v any) {
	dec := json.NewDecoder(bytes.NewReader([]byte(t.Value)))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = fmt.Errorf("extra text after the JSON value")
		}
	}
	if err == nil {
		return
	}
	p := t.Pos
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off > 0 && off <= int64(len(t.Value)) {
		p.Column += utf8.RuneCountInString(t.Value[:off]) - 1
	}
	a.errorf(p, "bad JSON: %v", err)
}
