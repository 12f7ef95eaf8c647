package text

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"testing"
)

// marshalString is what encoding/json writes for s: json.Marshal with
// html, an Encoder with HTML escaping off without (its newline cut).
func marshalString(t testing.TB, s string, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TestAppendJSONString checks the quoter against encoding/json, byte for
// byte, with and without HTML escaping: plain text, every escape, control
// characters, invalid UTF-8, U+2028 and U+2029, and random strings.
func TestAppendJSONString(t *testing.T) {
	cases := []string{
		"", "plain", `quote " and \ backslash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff\xfe utf8 \xc3",
		"ends in half a rune \xe2\x82",
	}
	r := rand.New(rand.NewSource(1))
	alphabet := []string{"a", " ", "\"", "\\", "\n", "\x00", "\x1b", "<", ">", "&", "é", "\u2028", "\xff", "\xe2\x82", "😀", "\u007f"}
	for range 2000 {
		var b []byte
		for range r.Intn(12) {
			b = append(b, alphabet[r.Intn(len(alphabet))]...)
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		for _, html := range []bool{false, true} {
			got := AppendJSONString([]byte("x"), s, html)
			if want := append([]byte("x"), marshalString(t, s, html)...); !bytes.Equal(got, want) {
				t.Fatalf("AppendJSONString(%q, html %v) = %s, want %s", s, html, got, want)
			}
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("<a href=\"x\">\xff\u2028</a>")
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{false, true} {
			if got, want := AppendJSONString(nil, s, html), marshalString(t, s, html); !bytes.Equal(got, want) {
				t.Fatalf("AppendJSONString(%q, html %v) = %s, want %s", s, html, got, want)
			}
		}
	})
}

// BenchmarkAppendJSONString quotes a 100-byte line of base64 text, the
// live log's usual line, with HTML escaping.
func BenchmarkAppendJSONString(b *testing.B) {
	line := "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODkrLz09QUJDREVGR0hJ"
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		buf = AppendJSONString(buf[:0], line, true)
	}
}
