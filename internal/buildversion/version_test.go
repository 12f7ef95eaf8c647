package buildversion

import (
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	t.Parallel()
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, Fallback},
		{"module version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}, Settings: rev}, "v1.2.0"},
		{"pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126083547-0123456789ab+dirty"}}, "v0.0.0-20261126083547-0123456789ab+dirty"},
		{"devel with a commit", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "0123456789ab"},
		{"dirty commit", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "0123456789ab-dirty"},
		{"nothing", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Fallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Of(tt.info); got != tt.want {
				t.Errorf("Of(%v) = %q, want %q", tt.info, got, tt.want)
			}
		})
	}
}
