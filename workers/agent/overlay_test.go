package agent

import (
	"encoding/json"
	"reflect"
	"testing"

	"smith/workers/provider"
)

// TestOverlaySettings: the user's settings (comments and trailing commas
// allowed) keep every key, with the preset's keys set over them.
func TestOverlaySettings(t *testing.T) {
	set := []provider.Setting{{Path: "general.maxAttempts", Value: 1}, {Path: "general.retryFetchErrors", Value: false}}
	tests := []struct{ name, in, want string }{
		{"none", "", `{"general": {"maxAttempts": 1, "retryFetchErrors": false}}`},
		{"theirs kept", `{"model": {"name": "gemini-2.5-pro"}, "general": {"maxAttempts": 7, "vimMode": true}}`,
			`{"model": {"name": "gemini-2.5-pro"}, "general": {"maxAttempts": 1, "retryFetchErrors": false, "vimMode": true}}`},
		{"comments", "{\n  // my model\n  \"model\": {\"name\": \"a//b\"}, /* trailing */\n  \"ui\": {\"theme\": \"x\",},\n}\n",
			`{"model": {"name": "a//b"}, "ui": {"theme": "x"}, "general": {"maxAttempts": 1, "retryFetchErrors": false}}`},
	}
	for _, tt := range tests {
		got, err := overlaySettings([]byte(tt.in), set)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal([]byte(tt.want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
	if _, err := overlaySettings([]byte("[1, 2"), set); err == nil {
		t.Errorf("a broken settings file was accepted")
	}
}
