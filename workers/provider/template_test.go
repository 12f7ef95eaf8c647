package provider

import "testing"

func TestSubstTemplate(t *testing.T) {
	t.Parallel()
	vars := Vars{{Key: "PROMPT", Value: "hi $x"}, {Key: "model", Value: "m1"}, {Key: "max_tokens", Value: "100"}}
	tests := []struct {
		name, in, want, wantKey string
	}{
		{"plain", "claude", "claude", ""},
		{"whole", "${PROMPT}", "hi $x", ""},
		{"inside", "--model=${model}!", "--model=m1!", ""},
		{"two", "${model}/${max_tokens}", "m1/100", ""},
		{"dollar dollar", "$$PROMPT costs $$5", "$PROMPT costs $5", ""},
		{"lone dollar", "a$b $", "a$b $", ""},
		{"double brace", "${{ raw }}", "${{ raw }}", ""},
		{"unterminated", "x${PROMPT", "x${PROMPT", ""},
		{"unknown", "${temperature}", "", "temperature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Subst(tt.in, vars)
			gotKey := ""
			if err != nil {
				gotKey = err.Key
			}
			if got != tt.want || gotKey != tt.wantKey {
				t.Errorf("Subst(%q) = %q, key %q, want %q, key %q", tt.in, got, gotKey, tt.want, tt.wantKey)
			}
		})
	}
}
