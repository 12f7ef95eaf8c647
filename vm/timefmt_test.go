package vm

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestStampCacheMatchesRFC3339Nano: the cached formatter writes what
// time.RFC3339Nano writes, for fractions with and without trailing zeros,
// none, second and year boundaries, other zones and far years, in any
// order (the cache is hit and missed).
func TestStampCacheMatchesRFC3339Nano(t *testing.T) {
	base := time.Date(2026, 11, 25, 23, 59, 59, 0, time.UTC)
	times := []time.Time{
		base,
		base.Add(1),
		base.Add(100 * time.Millisecond),
		base.Add(123456789),
		base.Add(999999999),
		base.Add(time.Second),
		base.Add(time.Second + 10),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 5, time.UTC),
		base.In(time.FixedZone("X", 3600)),
		time.Unix(0, 0).UTC(),
		time.Unix(-1, 5).UTC(),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		times = append(times, base.Add(time.Duration(r.Int64N(int64(3*time.Second)))))
		if r.IntN(4) == 0 {
			times = append(times, base.Add(time.Duration(r.Int64N(1<<62))).Truncate(time.Duration(r.IntN(1000))))
		}
	}
	var c stampCache
	for _, tm := range times {
		if got, want := string(c.append(nil, tm)), tm.Format(time.RFC3339Nano); got != want {
			t.Fatalf("stampCache.append(%v) = %q, want %q", tm, got, want)
		}
	}
}
