package provider

import (
	"fmt"
	"strings"
)

// Vars are a provider template's keys: the built-in ones, then the
// provider's defaults, with the step's provider_params over them.
type Vars []Param

// Set sets key, keeping its first position.
func (v Vars) Set(key, value string) Vars {
	for i := range v {
		if v[i].Key == key {
			v[i].Value = value
			return v
		}
	}
	return append(v, Param{Key: key, Value: value})
}

func (v Vars) Get(key string) (string, bool) {
	for _, kv := range v {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

func (v Vars) Names() []string {
	out := make([]string, len(v))
	for i, kv := range v {
		out[i] = kv.Key
	}
	return out
}

// A KeyError is an unknown template key.
type KeyError struct{ Key string }

func (e *KeyError) Error() string { return fmt.Sprintf("unknown template key '%s'", e.Key) }

// Subst substitutes one template element: "${KEY}" is the key's value,
// "$$" is "$", "${{" passes through untouched, and any other "$" is literal.
// These are provider template keys, not the VM's variables.
func Subst(s string, vars Vars) (string, *KeyError) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c != '$' || i+1 == len(s):
			b.WriteByte(c)
			i++
		case s[i+1] == '$':
			b.WriteByte('$')
			i += 2
		case s[i+1] == '{' && i+2 < len(s) && s[i+2] == '{':
			b.WriteString("${{")
			i += 3
		case s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				i = len(s)
				continue
			}
			key := s[i+2 : i+2+end]
			v, ok := vars.Get(key)
			if !ok {
				return "", &KeyError{key}
			}
			b.WriteString(v)
			i += end + 3
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

// Uses reports whether the template element s names ${key}.
func Uses(s, key string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '$' {
			continue
		}
		switch {
		case s[i+1] == '$':
			i++
		case s[i+1] == '{' && strings.HasPrefix(s[i+2:], key+"}"):
			return true
		}
	}
	return false
}
