package agent

import (
	"smith/lang"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
	"testing"
)

// TestTemplateKeyCatalog: the keys a provider template may use without
// declaring them (lang.TemplateKeys, what the checker accepts) are exactly
// the keys a provider step fills.
func TestTemplateKeyCatalog(t *testing.T) {
	vars := providerVars(&step.Request{}, provider.Provider{}, steprun.Paths{}, "p", "f")
	if len(vars) != len(lang.TemplateKeys) {
		t.Fatalf("workers fills %d template keys, lang.TemplateKeys has %d", len(vars), len(lang.TemplateKeys))
	}
	for i, k := range lang.TemplateKeys {
		if vars[i].Key != k {
			t.Errorf("template key %d: workers fills %q, lang.TemplateKeys says %q", i, vars[i].Key, k)
		}
	}
}
