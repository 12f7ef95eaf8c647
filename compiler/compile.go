package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"smith/compiler/ir"
	"smith/isa"
	"smith/manifest"
	"smith/source"
)

// collectAfterLoad is the size of a document, in bytes, from which Compile
// collects garbage after loading it (docs/performance.md, fifth pass).
const collectAfterLoad = 1 << 20

// A Result is what Compile produced: the IR and, when the document had no
// errors, the verified program.
type Result struct {
	IR   *ir.Program
	Prog *isa.Program
}

// Compile checks and compiles one source document. name is the file name as
// the user gave it (diagnostics print it). It returns every diagnostic found;
// Result.Prog is nil when any of them is an error (or opt.ChecksOnly).
func Compile(name string, src []byte, opt Options) (*Result, source.Diagnostics) {
	return compile(name, &src, opt)
}

// CompileSource is Compile given the only reference to the source, which
// it drops after the load (*src is nil when it returns), so that a large
// document's bytes are garbage while it is lowered (compile).
func CompileSource(name string, src *[]byte, opt Options) (*Result, source.Diagnostics) {
	return compile(name, src, opt)
}

// compile is Compile, given the only reference to the source: it drops
// the reference after the load, so that a collection frees the source
// (CompileFile's, whose register argument would otherwise keep it live to
// the end; docs/performance.md, fifth pass, third part).
func compile(name string, srcp *[]byte, opt Options) (*Result, source.Diagnostics) {
	var ds source.Diagnostics
	wf, mf, lds := manifest.Load(name, *srcp)
	ds.Append(lds...)
	size := len(*srcp)
	*srcp = nil
	// A large document leaves garbage that the next stages can reuse
	// instead of growing the heap, whose every new page costs a page
	// fault: a large document saves more than a collection costs. After
	// the load the source is garbage (when CompileFile read it), and so is
	// the tree of a document loaded whole (the decoded document is much
	// smaller); a manifest without diagnostics was read node by node
	// (manifest.LoadManifest) and left no tree, but the lowering takes
	// its decoded form apart (Options.consume), and what is left is
	// garbage after the lowering, before the graph checks.
	big := size >= collectAfterLoad
	streamed := mf != nil && len(lds) == 0
	if big {
		runtime.GC()
	}
	res := &Result{}
	switch {
	case wf != nil:
		p, d := LowerWorkflow(wf, opt)
		ds.Append(d...)
		res.IR = p
	case mf != nil:
		lo := opt
		lo.consume = big && streamed
		p, d := LowerManifest(mf, lo)
		ds.Append(d...)
		res.IR = p
	}
	if big && streamed {
		runtime.GC()
	}
	if res.IR == nil {
		ds.Sort()
		return res, ds
	}
	fp := flatten(res.IR) // one layout for the graph checks and the code
	gds := checkGraph(fp)
	if opt.Start != "" {
		// Reachability is the document's, from its entry: starting
		// elsewhere (--start) leaves the entry's part unreached by design.
		gds = slices.DeleteFunc(gds, func(d source.Diagnostic) bool { return d.Code == source.WUnreachable })
	}
	ds.Append(gds...)
	ds.Sort()
	if wf != nil {
		strictFlowOnly(ds)
	}
	if ds.HasErrors() || opt.ChecksOnly {
		return res, ds
	}
	prog, err := generate(fp)
	if err == nil {
		err = prog.Verify()
	}
	if err != nil {
		ds.Append(internalDiag(res.IR.File, err))
		return res, ds
	}
	res.Prog = prog
	return res, ds
}

// strictFlowOnly adds to the last error of a workflow whose only errors are
// E_STRICT_FLOW that strict_flow: false would accept it.
func strictFlowOnly(ds source.Diagnostics) {
	last := -1
	for i, d := range ds {
		if d.Severity != source.SevError {
			continue
		}
		if d.Code != source.EStrictFlow {
			return
		}
		last = i
	}
	if last >= 0 {
		ds[last].Msg += "; these are the workflow's only errors: add the handlers, or set strict_flow: false at the top level (then a missing success handler goes to the next step and a missing failure handler fails the run)"
	}
}

// CompileFile reads and compiles the source file at path.
func CompileFile(path string, opt Options) (*Result, source.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return &Result{}, source.Diagnostics{source.New(source.Pos{File: path}, source.EParse, "cannot read file: %v%s", unwrapPathErr(err), missingFileHint(path, err))}
	}
	return compile(path, &src, opt)
}

// IsBytecode reports whether path names a compiled program (.smbc).
func IsBytecode(path string) bool {
	return strings.EqualFold(filepath.Ext(path), ".smbc")
}

// LoadProgram returns the program at path: a .smbc file decoded and verified,
// or a source document compiled. Warnings are returned with the program.
// opt.Layout applies to both: a .smbc's literal paths are checked against
// it (CheckLayout) as a source's are while it is lowered.
func LoadProgram(path string, opt Options) (*isa.Program, source.Diagnostics) {
	if !IsBytecode(path) {
		res, ds := CompileFile(path, opt)
		return res.Prog, ds
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, source.Diagnostics{source.New(source.Pos{File: path}, source.EBytecode, "cannot read file: %v", unwrapPathErr(err))}
	}
	p, err := isa.Decode(data)
	if err != nil {
		if ds := source.AsDiagnostics(err); ds != nil {
			for i := range ds {
				if ds[i].Pos.File == "" {
					ds[i].Pos.File = path
				}
			}
			return nil, ds
		}
		return nil, source.Diagnostics{source.New(source.Pos{File: path}, source.EBytecode, "%v", err)}
	}
	if ds := CheckLayout(p, opt.Layout); len(ds) > 0 {
		return nil, ds
	}
	return p, nil
}

// Disassemble returns the program's text, for tests and tools.
func Disassemble(p *isa.Program) (string, error) {
	var b bytes.Buffer
	err := p.Disassemble(&b)
	return b.String(), err
}

func internalDiag(file string, err error) source.Diagnostic {
	return source.New(source.Pos{File: file}, source.EInternal, "internal error: %v", err)
}

// missingFileHint says what to do about a file that does not exist: a
// similar name in its directory, or which directory was searched.
func missingFileHint(path string, err error) string {
	if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	dir := filepath.Dir(path)
	if _, derr := os.Stat(dir); derr != nil {
		return fmt.Sprintf("; the directory '%s' does not exist either: check the path (relative paths start at the current directory)", dir)
	}
	if s := NearFile(path); s != "" {
		return fmt.Sprintf(" (did you mean '%s'?)", s)
	}
	return "; check the path (relative paths start at the current directory)"
}

// NearFile returns the workflow or program file of path's folder whose name
// is nearest to path's (a likely typo or rename), joined to the folder, or ""
// when none is near or the folder cannot be read.
func NearFile(path string) string {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json", ".smbc":
			names = append(names, e.Name())
		}
	}
	if s := source.Suggest(filepath.Base(path), names); s != "" {
		return filepath.Join(dir, s)
	}
	return ""
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s", pe.Err)
	}
	return err
}
