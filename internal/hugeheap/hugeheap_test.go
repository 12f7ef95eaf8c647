//go:build linux

package hugeheap

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestGrowAdvisesHugePages: after Grow, memory the heap then hands out lies
// in a mapping advised for huge pages ("hg" among its VmFlags in
// /proc/self/smaps), where the kernel's policy is madvise.
func TestGrowAdvisesHugePages(t *testing.T) {
	if !onlyWhenAsked() {
		t.Skipf("the kernel's transparent huge page policy is not madvise (%s): Grow does nothing here", enabledFile)
	}
	Grow(32 << 20)
	b := make([]byte, 1<<20)
	flags := vmFlags(t, uintptr(unsafe.Pointer(&b[0])))
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the heap's mapping has VmFlags %q after Grow, want hg (MADV_HUGEPAGE)", flags)
	}
}

// TestMappingOf finds the mapping of a heap address and of none.
func TestMappingOf(t *testing.T) {
	b := make([]byte, 1<<20)
	p := uintptr(unsafe.Pointer(&b[0]))
	lo, hi, ok := mappingOf(p)
	if !ok || lo > p || p >= hi {
		t.Errorf("mappingOf(%#x) = %#x, %#x, %v", p, lo, hi, ok)
	}
	if _, _, ok := mappingOf(0); ok {
		t.Errorf("mappingOf(0) found a mapping")
	}
}

// vmFlags returns the VmFlags line of the mapping that holds p.
func vmFlags(t *testing.T, p uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if span, _, _ := strings.Cut(line, " "); strings.Contains(span, "-") && !strings.HasSuffix(span, ":") {
			l, h, _ := strings.Cut(span, "-")
			a, err1 := strconv.ParseUint(l, 16, 64)
			z, err2 := strconv.ParseUint(h, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(a) <= p && p < uintptr(z)
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", p)
	return ""
}
