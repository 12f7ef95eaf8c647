package manifest

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestFormatYAMLCorpus: on every YAML document of the repository that
// parses, FormatYAML keeps the meaning (the same values), keeps every
// comment, and is idempotent.
func TestFormatYAMLCorpus(t *testing.T) {
	var files []string
	for _, root := range []string{"../examples", "../testdata", "../compiler/testdata", "testdata", "../cmd/smithc/testdata", "../vm/testdata"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) < 20 {
		t.Fatalf("only %d YAML files found", len(files))
	}
	comment := regexp.MustCompile(`(?m)(?:^|\s)(#.*)$`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		if yaml.Unmarshal(src, &want) != nil || strings.Contains(string(src), "\n---") {
			continue // not one parsable document: nothing to format
		}
		out, err := FormatYAML(src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		var got any
		if err := yaml.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the formatted document means something else (%v):\n%s", f, err, out)
			continue
		}
		again, err := FormatYAML(out)
		if err != nil || string(again) != string(out) {
			t.Errorf("%s: formatting twice changes the text (%v)", f, err)
		}
		for _, m := range comment.FindAllStringSubmatch(string(src), -1) {
			if c := strings.TrimSpace(m[1]); strings.Contains(m[0], "\"") || strings.Contains(m[0], "'") {
				continue // a # inside a quoted string is not a comment
			} else if !strings.Contains(string(out), c) {
				t.Errorf("%s: the comment %q is lost", f, c)
			}
		}
	}
}

// TestFormatYAML: the canonical form of a messy workflow.
func TestFormatYAML(t *testing.T) {
	src := `# A workflow
version:   "1.0"
name: messy


steps:
    # first
    -   name: A
        command: [ "echo",   "a" ]    # inline comment
        on:
              success: {goto: B}
              failure:   {error: "a failed"}

    -   name: B
        prompt: |
            line one

            line three
        provider: mock
        on: {success: {end: true}, failure: {error: "b failed"}}
    -   name: C
        prompt: >
            folded text stays
            folded as written,

              more-indented lines too
        provider: mock
        on: {success: {end: true}, failure: {error: "c failed"}}
`
	want := `# A workflow
version: "1.0"
name: messy

steps:
  # first
  - name: A
    command: ["echo", "a"] # inline comment
    on:
      success: {goto: B}
      failure: {error: "a failed"}

  - name: B
    prompt: |
      line one

      line three
    provider: mock
    on: {success: {end: true}, failure: {error: "b failed"}}
  - name: C
    prompt: >
      folded text stays
      folded as written,

        more-indented lines too
    provider: mock
    on: {success: {end: true}, failure: {error: "c failed"}}
`
	got, err := FormatYAML([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("FormatYAML =\n%s\nwant\n%s", got, want)
	}
	if _, err := FormatYAML([]byte("a: 1\n---\nb: 2\n")); err == nil {
		t.Errorf("two documents: no error")
	}
	if _, err := FormatYAML([]byte("a: [\n")); err == nil {
		t.Errorf("a syntax error: no error")
	}
}
