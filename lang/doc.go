// Package lang is the vocabulary of the Smith language that both halves
// read: the checker and compiler on one side, the VM and the workers on the
// other, and the generated docs. It holds the reserved signals and the one
// rule by which a DISPATCH falls back (Dispatch), the one Template/Ref type
// of ${...} references, the roots and fields a reference may name, and the
// catalog of internal workers, provider presets, built-in schemas, provider
// template keys and payload layers.
//
// Adding a signal, a step field or an internal worker is one edit here; a
// place that forgets it fails to compile or fails a completeness test
// (compiler and vm each test that they accept and resolve exactly these
// tables).
//
// lang is a leaf: it imports the standard library and source only, and
// holds no behaviour beyond reading its own tables.
package lang
