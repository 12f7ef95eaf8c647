package provider

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
