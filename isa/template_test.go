package isa

import "testing"

func TestTemplateSource(t *testing.T) {
	t.Parallel()
	r := ref("context.k", at("f.yaml", 1, 1), PathElem{Key: "context"}, PathElem{Key: "k"})
	tests := []struct {
		name string
		t    Template
		want string
	}{
		{"empty", Template{}, ""},
		{"literal", Lit("step 'S' failed"), "step 'S' failed"},
		{"reference", tmpl(TPart{Lit: "key "}, TPart{Ref: r}, TPart{Lit: " rejected"}), "key ${context.k} rejected"},
		{"dollar", Lit("costs $5 or ${x}"), "costs $$5 or $${x}"},
		{"passthrough", Lit("a ${{ raw }} b"), "a ${{ raw }} b"},
		{"unterminated passthrough", Lit("a ${{raw} b"), "a $${{raw} b"},
		{"passthrough then dollar", tmpl(TPart{Lit: "${{x}}$"}, TPart{Ref: r}), "${{x}}$$${context.k}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.t.Source(); got != tt.want {
				t.Errorf("Source(%+v) = %q, want %q", tt.t, got, tt.want)
			}
		})
	}
}
