package isa

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/internal/goldenfile"
	"smith/source"
)

var update = flag.Bool("update", false, "rewrite .golden files in testdata")

// golden compares got with the golden file path, or writes it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	goldenfile.Check(t, path, got, *update, goldenfile.Regen(t, "isa"))
}

// TestGoldenAsm assembles every testdata/asm/NAME.asm and compares its
// disassembly with NAME.dis.golden and its .smbc encoding (hex) with
// NAME.smbc.golden.
func TestGoldenAsm(t *testing.T) {
	files, err := filepath.Glob("testdata/asm/*.asm")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs in testdata/asm: %v", err)
	}
	for _, file := range files {
		stem := strings.TrimSuffix(file, ".asm")
		t.Run(filepath.Base(stem), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Assemble(file, bytes.NewReader(src))
			if err != nil {
				t.Fatalf("Assemble(%q) = %v", file, err)
			}
			var dis bytes.Buffer
			if err := p.Disassemble(&dis); err != nil {
				t.Fatalf("Disassemble() = %v", err)
			}
			golden(t, stem+".dis.golden", dis.Bytes())
			bin, err := p.MarshalBinary()
			if err != nil {
				t.Fatalf("MarshalBinary() = %v", err)
			}
			golden(t, stem+".smbc.golden", []byte(hex.Dump(bin)))
		})
	}
}

// TestGoldenAsmErrors assembles every testdata/asm-errors/NAME.asm and
// compares the diagnostics with NAME.diag.golden.
func TestGoldenAsmErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/asm-errors/*.asm")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs in testdata/asm-errors: %v", err)
	}
	for _, file := range files {
		stem := strings.TrimSuffix(file, ".asm")
		t.Run(filepath.Base(stem), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(file)
			p, err := Assemble(name, bytes.NewReader(src))
			if err == nil {
				t.Fatalf("Assemble(%q) = %v, nil, want an error", name, p)
			}
			ds := source.AsDiagnostics(err)
			if len(ds) == 0 {
				t.Fatalf("Assemble(%q) error %v carries no diagnostics", name, err)
			}
			var out bytes.Buffer
			if err := ds.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			golden(t, stem+".diag.golden", out.Bytes())
		})
	}
}
