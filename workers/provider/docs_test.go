package provider

import (
	"fmt"
	"strings"
	"testing"

	"smith/internal/docgen"
	"smith/lang"
)

// TestPresetDocs: docs/providers.md's table of the variables that pass to
// each preset is generated from the one table of preset facts (clis).
func TestPresetDocs(t *testing.T) {
	code := func(list []string) string {
		var out []string
		for _, v := range list {
			out = append(out, "`"+v+"`")
		}
		return strings.Join(out, ", ")
	}
	var b strings.Builder
	b.WriteString("| preset | masked like secrets (keys, tokens, endpoints, projects, proxies, config home) | passed as they are (backend switches, regions, models, certificates) | key variable (yours / `home: isolated`) | login check |\n| --- | --- | --- | --- | --- |\n")
	for _, name := range lang.ProviderPresets {
		f, ok := clis[name]
		if !ok {
			continue
		}
		check := "`" + strings.Join(f.LoginStatus, " ") + "`"
		if len(f.LoginStatus) == 0 {
			check = "-"
		}
		if f.LoginOKExit != 0 {
			check += fmt.Sprintf(" with no prompt (exit %d: ready)", f.LoginOKExit)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` / `%s` | %s |\n", name, code(f.Vars), code(f.Switches), f.UserKeyVar(), f.KeyVar, check)
	}
	docgen.Region(t, "../../docs/providers.md", "preset-variables", b.String(), *update, "go test ./workers/provider -run TestPresetDocs -update")
}
