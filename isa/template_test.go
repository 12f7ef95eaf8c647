package isa

import (
	"testing"

	"smith/lang"
)

func TestTemplateSource(t *testing.T) {
	t.Parallel()
	r := ref("context.k", at("f.yaml", 1, 1), lang.PathElem{Key: "context"}, lang.PathElem{Key: "k"})
	tests := []struct {
		name string
		t    lang.Template
		want string
	}{
		{"empty", lang.Template{}, ""},
		{"literal", lang.Lit("step 'S' failed"), "step 'S' failed"},
		{"reference", tmpl(lang.Part{Lit: "key "}, lang.Part{Ref: r}, lang.Part{Lit: " rejected"}), "key ${context.k} rejected"},
		{"dollar", lang.Lit("costs $5 or ${x}"), "costs $$5 or $${x}"},
		{"passthrough", lang.Lit("a ${{ raw }} b"), "a ${{ raw }} b"},
		{"unterminated passthrough", lang.Lit("a ${{raw} b"), "a $${{raw} b"},
		{"passthrough then dollar", tmpl(lang.Part{Lit: "${{x}}$"}, lang.Part{Ref: r}), "${{x}}$$${context.k}"},
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
