package vm

import "time"

// A stampCache formats times as time.RFC3339Nano, byte for byte, reusing
// the date and clock of the last second it formatted: a step's start and
// end, and the next step's, mostly fall in one second, and the general
// formatter is a large part of a block's cost when nothing is persisted.
type stampCache struct {
	sec    int64 // Unix seconds of prefix; prefix empty: none yet
	prefix []byte
}

// append appends t in RFC 3339 with nanoseconds (trailing zeros of the
// fraction cut, no fraction at all when it is zero), as
// t.AppendFormat(b, time.RFC3339Nano). Only UTC times are cached.
func (c *stampCache) append(b []byte, t time.Time) []byte {
	if t.Location() != time.UTC {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	if sec := t.Unix(); len(c.prefix) == 0 || sec != c.sec {
		full := t.Truncate(time.Second).AppendFormat(c.prefix[:0], time.RFC3339)
		if len(full) == 0 || full[len(full)-1] != 'Z' {
			return t.AppendFormat(b, time.RFC3339Nano) // a year beyond 9999: no cache
		}
		c.sec, c.prefix = sec, full[:len(full)-1]
	}
	b = append(b, c.prefix...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}
