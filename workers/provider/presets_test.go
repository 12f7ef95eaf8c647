package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
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

// TestPresetRecords: every preset's record is whole: a command, an
// install hint, the readers of its reply and its activity, and a tested
// version.
func TestPresetRecords(t *testing.T) {
	for name, f := range clis {
		if len(f.argv) == 0 || f.argv[0] != name {
			t.Errorf("%s: argv %q does not run %s", name, f.argv, name)
		}
		if f.Install.Title == "" || f.Install.Package == "" || f.Install.Then == "" {
			t.Errorf("%s: Install %+v is not whole", name, f.Install)
		}
		if f.newReader == nil || f.activity == nil || f.Tested == "" {
			t.Errorf("%s: a reply reader, an activity reader and a tested version are required", name)
		}
	}
}

// TestPinnedVersions: the version each preset says it was tested with (what
// smithvm doctor compares against) is the one testdata/clis pins, which
// .ci/run installs and the real-CLI suite runs.
func TestPinnedVersions(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "clis", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	for name, f := range clis {
		if got := pkg.Dependencies[f.Install.Package]; got != f.Tested {
			t.Errorf("%s: Tested = %q, testdata/clis/package.json pins %q", name, f.Tested, got)
		}
	}
}

// TestKeyVarsHoldEveryCredential: every masked variable that holds a
// credential by its name (an API key, a token, a secret access key, a
// passphrase) is one a commit must not hold (KeyVars, E_SECRET_IN_CHANGE),
// not only those that are a login by themselves.
func TestKeyVarsHoldEveryCredential(t *testing.T) {
	credential := regexp.MustCompile(`(_API_KEY|_TOKEN|_SECRET_ACCESS_KEY|_PASSPHRASE)$`)
	keys := KeyVars()
	for _, v := range MaskedVars() {
		if credential.MatchString(v) && !slices.Contains(keys, v) {
			t.Errorf("%s is masked and holds a credential, but KeyVars() does not list it: a commit holding its value is not refused", v)
		}
	}
}

// TestInstallHintKeyVar: the install hint of a missing CLI names the key
// variable the CLI reads in the user's own home (codex: CODEX_API_KEY),
// the one docs/getting-started.md and the login message give.
func TestInstallHintKeyVar(t *testing.T) {
	t.Parallel()
	for name, f := range clis {
		hint := InstallHint(name)
		if f.Install.Package == "" || !regexp.MustCompile(`[A-Z_]+_API_KEY`).MatchString(hint) {
			continue
		}
		if !strings.Contains(hint, "set "+f.UserKeyVar()) {
			t.Errorf("InstallHint(%q) = %q, want it to name %s, the key variable %s reads in the user's home", name, hint, f.UserKeyVar(), name)
		}
	}
}

// TestModelProvider reads what the model provider chosen in codex's
// config.toml asks for, from one reading of the file: its key variable,
// the variables of its headers (each once, after the key's), and the
// credentials written in its table.
func TestModelProvider(t *testing.T) {
	codex, _ := CLIOf("codex")
	claude, _ := CLIOf("claude")
	config := []byte(`model_provider = "gw"
[model_providers.gw]
env_key = "GW_KEY"
experimental_bearer_token = "bearer-0123456789"
env_http_headers = { "X-Team" = "GW_TEAM", "X-Also" = "GW_KEY" }
http_headers = { "X-Short" = "abc", "X-Org" = "org-header-0123456789" }
[model_providers.other]
env_key = "OTHER_KEY"
`)
	got := codex.ModelProvider(config)
	want := ModelProvider{
		KeyVar:     "GW_KEY",
		HeaderVars: [][2]string{{"X-Also", "GW_KEY"}, {"X-Team", "GW_TEAM"}},
		Secrets:    []string{"bearer-0123456789", "org-header-0123456789"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ModelProvider = %+v, want %+v", got, want)
	}
	if vars := got.Vars(); !slices.Equal(vars, []string{"GW_KEY", "GW_TEAM"}) {
		t.Errorf("Vars = %q, want GW_KEY, GW_TEAM", vars)
	}
	for name, c := range map[string][]byte{
		"the built-in provider": []byte("model = \"o3\"\n"),
		"a broken file":         []byte("model_provider = \n"),
		"no file":               nil,
	} {
		if m := codex.ModelProvider(c); !reflect.DeepEqual(m, ModelProvider{}) || m.Vars() != nil {
			t.Errorf("%s: ModelProvider = %+v, want nothing", name, m)
		}
	}
	if m := claude.ModelProvider(config); !reflect.DeepEqual(m, ModelProvider{}) {
		t.Errorf("claude: ModelProvider = %+v, want nothing (its file is not codex's)", m)
	}
}
