package isa

import (
	"slices"
	"testing"
)

// TestKindTable: every kind has a row with a name of its own, the names
// invert (the assembler reads them), and every kind is either run by a
// worker, a container of blocks, or set_context.
func TestKindTable(t *testing.T) {
	names := KindNames()
	if len(names) != int(kindCount-KindCommand) {
		t.Fatalf("KindNames() = %v, want one name per kind", names)
	}
	for k := KindCommand; k < kindCount; k++ {
		info := k.Info()
		if info.Name == "" || slices.Index(names, info.Name) != int(k-KindCommand) {
			t.Errorf("kind %d: name %q is empty or not its own", k, info.Name)
		}
		if got, ok := KindByName(info.Name); !ok || got != k {
			t.Errorf("KindByName(%q) = %v, %v; want %d", info.Name, got, ok, k)
		}
		if !runsBlock(info.Op) || k.Exec() != (info.Op == OpExec) || k.Exec() && info.Body {
			t.Errorf("kind %s: Op %s, Exec %v, Body %v: want a block-running op, and no worker kind that holds blocks", k, info.Op, k.Exec(), info.Body)
		}
	}
	for _, k := range []BlockKind{0, kindCount} {
		if k.Valid() || k.Exec() || k.String() != "BlockKind(?)" {
			t.Errorf("kind %d: Valid %v, Exec %v, String %q; want an undefined kind", k, k.Valid(), k.Exec(), k.String())
		}
	}
}
