package text

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestMaskerString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"one", []string{"hunter2"}, "pw=hunter2!", "pw=***!"},
		{"every occurrence", []string{"ab"}, "abxabab", "***x******"},
		{"longest first", []string{"abc", "abcdef"}, "xabcdefy abc", "x***y ***"},
		{"overlap leftmost wins", []string{"abc", "bcd"}, "abcd", "***d"},
		{"empty ignored", []string{"", "k"}, "kk", "******"},
		{"no secrets", nil, "plain", "plain"},
		{"no match", []string{"zzz"}, "plain", "plain"},
		{"multibyte", []string{"päss"}, "-päss-", "-***-"},
		// A value read from a file ends in a newline; printed without
		// it, it is still the secret.
		{"trailing newline", []string{"tok-123\n"}, "a tok-123 b tok-123\n", "a *** b ***"},
		{"trailing CRLF", []string{"tok-123\r\n"}, "a tok-123 b", "a *** b"},
		{"only newlines", []string{"\n\n"}, "a\n\nb", "a***b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := NewMasker(tt.secrets)
			if got := m.String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := string(m.Bytes([]byte(tt.in))); got != tt.want {
				t.Errorf("Bytes(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMaskerNil(t *testing.T) {
	t.Parallel()
	var m *Masker
	if got := m.String("secret"); got != "secret" {
		t.Errorf("nil String(%q) = %q, want %q", "secret", got, "secret")
	}
	if got := string(m.Bytes([]byte("secret"))); got != "secret" {
		t.Errorf("nil Bytes(%q) = %q, want %q", "secret", got, "secret")
	}
	var buf bytes.Buffer
	w := m.Writer(&buf)
	w.Write([]byte("secret"))
	w.Close()
	if buf.String() != "secret" {
		t.Errorf("nil Writer wrote %q, want %q", buf.String(), "secret")
	}
}

func TestMaskerWriter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secrets []string
		chunks  []string
		want    string
	}{
		{"split in two", []string{"topsecret"}, []string{"a top", "secret b"}, "a *** b"},
		{"byte by byte", []string{"topsecret"}, strings.Split("x topsecret y", ""), "x *** y"},
		{"split at every point", []string{"s3cr3t", "s3"}, []string{"s", "3", "cr", "3t", "s", "3"}, "******"},
		{"false start held then released", []string{"abcd"}, []string{"xab", "cx", "abc"}, "xabcxabc"},
		{"longest across writes", []string{"abc", "abcdef"}, []string{"ab", "cd", "ef", "abc"}, "******"},
		{"big chunk", []string{"key"}, []string{strings.Repeat("a", 10000) + "ke", "y" + strings.Repeat("b", 10)}, strings.Repeat("a", 10000) + "***" + strings.Repeat("b", 10)},
		{"nothing to mask", []string{""}, []string{"a", "b"}, "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			w := NewMasker(tt.secrets).Writer(&buf)
			for _, c := range tt.chunks {
				n, err := w.Write([]byte(c))
				if n != len(c) || err != nil {
					t.Fatalf("Write(%q) = %d, %v, want %d, nil", c, n, err, len(c))
				}
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("Writer(%q) wrote %q, want %q", tt.chunks, got, tt.want)
			}
		})
	}
}

// TestMaskerWriterHoldsBack checks that nothing that could be the start of a
// secret reaches w before the rest is known.
func TestMaskerWriterHoldsBack(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewMasker([]string{"secret"}).Writer(&buf)
	w.Write([]byte("hello secr"))
	if got := buf.String(); strings.Contains(got, "secr") {
		t.Errorf("after a partial secret the writer passed on %q", got)
	}
	w.Write([]byte("et"))
	w.Close()
	if got := buf.String(); got != "hello ***" {
		t.Errorf("wrote %q, want %q", got, "hello ***")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken") }

func TestMaskerWriterError(t *testing.T) {
	t.Parallel()
	w := NewMasker([]string{"k"}).Writer(failWriter{})
	if _, err := w.Write([]byte("abc")); err == nil {
		t.Errorf("Write to a broken writer = nil error, want an error")
	}
}

// FuzzMasker: a secret never survives masking, and the streaming writer,
// whatever the chunks, gives what String gives.
func FuzzMasker(f *testing.F) {
	f.Add("token abc123 and abc123", "abc123", 3)
	f.Add("aaaa", "aa", 1)
	f.Add("xsecretsecrety", "secret", 5)
	f.Add("", "s", 2)
	f.Fuzz(func(t *testing.T, text, secret string, chunk int) {
		if secret == "" || strings.Contains(secret, "*") || strings.ContainsAny(secret, "\x00") {
			return
		}
		m := NewMasker([]string{secret})
		got := m.String(text)
		if strings.Contains(got, secret) {
			t.Fatalf("String(%q) = %q still holds %q", text, got, secret)
		}
		var b strings.Builder
		w := m.Writer(&b)
		if chunk <= 0 {
			chunk = 1
		}
		for i := 0; i < len(text); i += chunk {
			w.Write([]byte(text[i:min(i+chunk, len(text))]))
		}
		w.Close()
		if b.String() != got {
			t.Fatalf("Writer in chunks of %d gave %q, String %q", chunk, b.String(), got)
		}
	})
}

// TestMaskerJSONEscaped: a secret with a quote, a backslash, a control
// character or <, >, & is masked also as JSON encoders write it inside a
// string (JSON.stringify, encoding/json with and without HTML escaping):
// a step that prints JSON holding it leaves no readable copy.
func TestMaskerJSONEscaped(t *testing.T) {
	const secret = "pa\"ss\\w<o>&rd\t9"
	m := NewMasker([]string{secret})
	for _, in := range []string{
		`{"k":"pa\"ss\\w<o>&rd\t9"}`,                       // JSON.stringify, json.Encoder with SetEscapeHTML(false)
		`{"k":"pa\"ss\\w\u003co\u003e\u0026rd\t9"}`,        // json.Marshal
		"plain " + secret + " and " + `pa\"ss\\w<o>&rd\t9`, // both forms in one text
	} {
		got := m.String(in)
		if strings.Contains(got, "ss\\") || strings.Contains(got, "rd\\t9") || strings.Contains(got, "rd\t9") {
			t.Errorf("String(%q) = %q, want every form of the secret masked", in, got)
		}
		var b strings.Builder
		w := m.Writer(&b)
		for i := 0; i < len(in); i++ {
			w.Write([]byte{in[i]})
		}
		w.Close()
		if b.String() != got {
			t.Errorf("Writer byte by byte gave %q, String %q", b.String(), got)
		}
	}
	if got := NewMasker([]string{"plain-key-123"}).String(`{"k":"plain-key-123"}`); got != `{"k":"***"}` {
		t.Errorf("a plain key in JSON = %q, want {\"k\":\"***\"}", got)
	}
}
