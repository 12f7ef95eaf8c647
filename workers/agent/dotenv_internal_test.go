package agent

import "testing"

// TestDotEnv: the lines of a .env file as gemini reads them.
func TestDotEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, key, want string
	}{
		{"plain", "GEMINI_API_KEY=abc123456\n", "GEMINI_API_KEY", "abc123456"},
		{"export", "export GEMINI_API_KEY=abc123456\n", "GEMINI_API_KEY", "abc123456"},
		{"double quotes", "GEMINI_API_KEY=\"abc 123456\" # mine\n", "GEMINI_API_KEY", "abc 123456"},
		{"single quotes", "GEMINI_API_KEY='abc#123456'\n", "GEMINI_API_KEY", "abc#123456"},
		{"comment after", "GEMINI_API_KEY=abc123456 # mine\n", "GEMINI_API_KEY", "abc123456"},
		{"spaces", "  GEMINI_API_KEY = abc123456  \r\n", "GEMINI_API_KEY", "abc123456"},
		{"commented out", "# GEMINI_API_KEY=abc123456\n", "GEMINI_API_KEY", ""},
		{"no value", "GEMINI_API_KEY\n", "GEMINI_API_KEY", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := dotEnv(tt.text)[tt.key]; got != tt.want {
				t.Errorf("dotEnv(%q)[%s] = %q, want %q", tt.text, tt.key, got, tt.want)
			}
		})
	}
}
