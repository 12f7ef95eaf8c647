// Decodegen writes, from the document types of package manifest
// (types.go), the two files that follow from their fields: decode_gen.go,
// the decoder of every object type (a switch on the document keys of its
// fields), and keydocs_gen_test.go, the key documentation that the schema
// printer and the reference tables read (each key's field doc comment,
// split at a final "Default: X."). A document key is thus written once:
// as the json tag of its field, described by the field's doc comment.
//
// Run it with go generate ./manifest. TestGenerated fails when either file
// differs from what it would write.
//
// A field's decoding follows its Go type:
//
//	T (String, Number, Bool, StringList, StringOrList, StringMap, Scalar, Free)
//	                  decT(v)
//	*T (same T)       ptr(decT(v)): present in the document, never nil
//	*S (object S)     d.decS(v)
//	[]*S              decList(v, d.decS)
//	map[string]*S     decMap(v, d.decS), S keyed (Key, Pos, Order)
//	anything else     d.decSF(x, v), hand-written, for field F of S
//
// An object S has a field with a json key. Its d.decS is generated unless
// decode.go writes one: positioned at the object, or for a keyed S (one
// with a Key field) at its key, with Order its index.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	files, err := generate(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "decodegen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.text, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "decodegen:", err)
			os.Exit(1)
		}
	}
}

// A file is one generated file: its name in the package's folder, its text.
type file struct {
	name string
	text []byte
}

// A structType is one struct type of types.go.
type structType struct {
	name   string
	fields []field
	keyed  bool // has a Key field: an entry of a document map
}

// A field is one field of a struct type with a document key.
type field struct {
	name, key string
	typ       ast.Expr
	doc       string // the doc comment, its lines joined by spaces
}

func (s *structType) object() bool { return len(s.fields) > 0 }

// generate reads the package in dir and returns the generated files.
func generate(dir string) ([]file, error) {
	types, err := readTypes(filepath.Join(dir, "types.go"))
	if err != nil {
		return nil, err
	}
	hand, err := handMethods(dir)
	if err != nil {
		return nil, err
	}
	dec, err := decoderText(types, hand)
	if err != nil {
		return nil, err
	}
	docs, err := keyDocsText(types)
	if err != nil {
		return nil, err
	}
	return []file{{"decode_gen.go", dec}, {"keydocs_gen_test.go", docs}}, nil
}

// readTypes returns the struct types of the file at path, in order.
func readTypes(path string) ([]*structType, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var out []*structType
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, sp := range g.Specs {
			ts, ok := sp.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			s := &structType{name: ts.Name.Name}
			for _, fl := range st.Fields.List {
				for _, n := range fl.Names {
					if n.Name == "Key" {
						s.keyed = true
					}
				}
				key := jsonKey(fl.Tag)
				if key == "" {
					continue
				}
				if len(fl.Names) != 1 {
					return nil, fmt.Errorf("%s: a field with a document key must have one name", fset.Position(fl.Pos()))
				}
				doc := ""
				if fl.Doc != nil {
					doc = strings.Join(strings.Split(strings.TrimSpace(fl.Doc.Text()), "\n"), " ")
				}
				s.fields = append(s.fields, field{name: fl.Names[0].Name, key: key, typ: fl.Type, doc: doc})
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// jsonKey returns the document key of a field's tag: "" for none or "-".
func jsonKey(tag *ast.BasicLit) string {
	if tag == nil {
		return ""
	}
	t, err := strconv.Unquote(tag.Value)
	if err != nil {
		return ""
	}
	key, _, _ := strings.Cut(reflect.StructTag(t).Get("json"), ",")
	if key == "-" {
		return ""
	}
	return key
}

// handMethods returns the names of the decoder's methods that the
// package's own (not generated, not test) files write.
func handMethods(dir string) (map[string]bool, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasSuffix(base, "_test.go") || strings.HasSuffix(base, "_gen.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "decoder" {
					out[fn.Name.Name] = true
				}
			}
		}
	}
	return out, nil
}

const header = "// Code generated by manifest/internal/decodegen from types.go; DO NOT EDIT.\n\n"

// decoderText is the text of decode_gen.go.
func decoderText(types []*structType, hand map[string]bool) ([]byte, error) {
	byName := map[string]*structType{}
	for _, s := range types {
		byName[s.name] = s
	}
	var b bytes.Buffer
	b.WriteString(header + "package manifest\n")
	positional := map[string]bool{} // objects decoded by d.decS(v)
	keyed := map[string]bool{}      // objects decoded by d.decS(i, e)
	for _, s := range types {
		if !s.object() {
			continue
		}
		fmt.Fprintf(&b, "\n// fields%s fills x from the entries of its object.\n", s.name)
		fmt.Fprintf(&b, "func (d *decoder) fields%s(x *%s, m []MapEntry) {\n\tfor _, e := range m {\n\t\tswitch e.Key {\n", s.name, s.name)
		for _, f := range s.fields {
			stmt, err := decodeStmt(s, f, byName, positional, keyed)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "\t\tcase %q:\n\t\t\t%s\n", f.key, stmt)
		}
		b.WriteString("\t\t}\n\t}\n}\n")
	}
	for _, s := range types {
		switch {
		case hand["dec"+s.name]:
		case positional[s.name]:
			fmt.Fprintf(&b, "\n// dec%s decodes an object; nil when v is not one.\n", s.name)
			fmt.Fprintf(&b, "func (d *decoder) dec%s(v *Value) *%s {\n\tif !isMap(v) {\n\t\treturn nil\n\t}\n", s.name, s.name)
			fmt.Fprintf(&b, "\tx := &%s{Pos: v.Pos}\n\td.fields%s(x, v.Map)\n\treturn x\n}\n", s.name, s.name)
		case keyed[s.name]:
			if !s.keyed || !s.object() {
				return nil, fmt.Errorf("%s is in a map but has no Key field or no document key: write decoder.dec%s in decode.go", s.name, s.name)
			}
			fmt.Fprintf(&b, "\n// dec%s decodes the i-th entry of a map; nil when its value is not an object.\n", s.name)
			fmt.Fprintf(&b, "func (d *decoder) dec%s(i int, e MapEntry) *%s {\n\tif !isMap(e.Val) {\n\t\treturn nil\n\t}\n", s.name, s.name)
			fmt.Fprintf(&b, "\tx := &%s{Key: e.Key, Pos: e.KeyPos, Order: i}\n\td.fields%s(x, e.Val.Map)\n\treturn x\n}\n", s.name, s.name)
		}
	}
	return format.Source(b.Bytes())
}

// decodeStmt is the statement that decodes e.Val into field f of s,
// noting in positional and keyed how the objects it names are decoded.
func decodeStmt(s *structType, f field, byName map[string]*structType, positional, keyed map[string]bool) (string, error) {
	lhs := "x." + f.name + " = "
	isObject := func(name string) bool { return byName[name] != nil && byName[name].object() }
	switch t := f.typ.(type) {
	case *ast.Ident:
		if !isObject(t.Name) {
			return lhs + "dec" + t.Name + "(e.Val)", nil
		}
	case *ast.StarExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			if !isObject(id.Name) {
				return lhs + "ptr(dec" + id.Name + "(e.Val))", nil
			}
			positional[id.Name] = true
			return lhs + "d.dec" + id.Name + "(e.Val)", nil
		}
	case *ast.ArrayType:
		if star, ok := t.Elt.(*ast.StarExpr); ok && t.Len == nil {
			if id, ok := star.X.(*ast.Ident); ok {
				positional[id.Name] = true
				return lhs + "decList(e.Val, d.dec" + id.Name + ")", nil
			}
		}
	case *ast.MapType:
		if star, ok := t.Value.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok {
				if k, ok := t.Key.(*ast.Ident); ok && k.Name == "string" {
					keyed[id.Name] = true
					return lhs + "decMap(e.Val, d.dec" + id.Name + ")", nil
				}
			}
		}
	}
	return "d.dec" + s.name + f.name + "(x, e.Val)", nil
}

// keyDocsText is the text of keydocs_gen_test.go.
func keyDocsText(types []*structType) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header + "package manifest\n\n")
	b.WriteString("// fieldKeyDocs documents every key of both formats, keyed \"Object.key\",\n")
	b.WriteString("// from the doc comments of the fields of types.go.\n")
	b.WriteString("var fieldKeyDocs = map[string]KeyDoc{\n")
	for _, s := range types {
		for _, f := range s.fields {
			if f.doc == "" {
				continue
			}
			desc, def := splitDefault(f.doc)
			fmt.Fprintf(&b, "\t%q: {%q, %q},\n", s.name+"."+f.key, desc, def)
		}
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

// splitDefault splits a field's doc comment into the key's meaning and
// the default its last sentence names ("... Default: X."), if any.
func splitDefault(doc string) (desc, def string) {
	i := strings.LastIndex(doc, " Default: ")
	if i < 0 || !strings.HasSuffix(doc, ".") {
		return doc, ""
	}
	return doc[:i], strings.TrimSuffix(doc[i+len(" Default: "):], ".")
}
