package workers

import (
	"testing"

	"smith/lang"
)

// TestPresetCatalog: lang.ProviderPresets is the one list of preset names
// the checker accepts; every name has its facts here, and every CLI whose
// facts are here is listed there.
func TestPresetCatalog(t *testing.T) {
	for _, name := range lang.ProviderPresets {
		if _, ok := preset(name); !ok {
			t.Errorf("preset %q of lang.ProviderPresets has no facts in workers", name)
		}
	}
	for name := range clis {
		found := false
		for _, p := range lang.ProviderPresets {
			found = found || p == name
		}
		if !found {
			t.Errorf("CLI %q has facts in workers but is not in lang.ProviderPresets", name)
		}
	}
}

// TestTemplateKeyCatalog: the keys a provider template may use without
// declaring them (lang.TemplateKeys, what the checker accepts) are exactly
// the keys workers fills.
func TestTemplateKeyCatalog(t *testing.T) {
	vars := providerVars(&Request{}, provider{}, paths{}, "p", "f")
	if len(vars) != len(lang.TemplateKeys) {
		t.Fatalf("workers fills %d template keys, lang.TemplateKeys has %d", len(vars), len(lang.TemplateKeys))
	}
	for i, k := range lang.TemplateKeys {
		if vars[i].Key != k {
			t.Errorf("template key %d: workers fills %q, lang.TemplateKeys says %q", i, vars[i].Key, k)
		}
	}
}
