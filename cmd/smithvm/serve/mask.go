package serve

import (
	"sort"
	"strings"

	"smith/vm"
)

// masker replaces the values of the run's secrets (the program's declared
// secrets, as the server's environment has them) and Config.Masked by ***.
// The run already masks what it writes; this is a second net for what the
// viewer serves (a file a step wrote itself, a diff).
func (s *Server) masker(st *vm.State) *strings.Replacer {
	var names []string
	if prog := s.stateProgram(st); prog != nil && s.cfg.Env != nil {
		names = append(names, prog.Secrets...)
		for _, b := range prog.Blocks {
			if b.Step != nil {
				names = append(names, b.Step.Secrets...)
			}
		}
	}
	var vals []string
	seen := map[string]bool{}
	add := func(v string) {
		if vm.SecretLen(v) >= vm.MinSecretLen && !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	for _, n := range names {
		if v, ok := s.cfg.Env(n); ok {
			add(v)
		}
	}
	for _, v := range s.cfg.Masked {
		add(v)
	}
	// Longest first, so a secret that contains another is masked whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	var pairs []string
	for _, v := range vals {
		pairs = append(pairs, v, "***")
	}
	return strings.NewReplacer(pairs...)
}
