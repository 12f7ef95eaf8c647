package builtin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/lang"
	"smith/source"
	"smith/workers/reply"
	"smith/workers/step"
)

// fileSeg returns a write segment of type typ for the given path/content
// pairs: one object for one pair, a list for more.
func fileSeg(t *testing.T, typ string, pairs ...string) step.Segment {
	t.Helper()
	type entry struct {
		FilePath    string `json:"filePath"`
		FileContent string `json:"fileContent"`
	}
	var entries []entry
	for i := 0; i+1 < len(pairs); i += 2 {
		entries = append(entries, entry{pairs[i], pairs[i+1]})
	}
	var v any = entries
	if len(entries) == 1 {
		v = entries[0]
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return step.Segment{Type: typ, Content: string(b)}
}

// readTree returns every regular file under dir as "rel: content" lines,
// sorted.
func readTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b.WriteString(filepath.ToSlash(rel) + ": " + string(data) + "|\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFileSystemWriterPathsInWorktree: files land under the worktree path
// (not WORKSPACE), with the content written as given.
func TestFileSystemWriterPathsInWorktree(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	req := p.request(lang.InternalFileSystemWriter, fileSeg(t, step.SegCodeOutput, "src/deep/main.go", "package main\n"))
	res := runIW(t, req)
	if res.Signal != lang.SigSuccess || len(res.Segments) != 0 || res.LinesWritten != 1 {
		t.Fatalf("FileSystemWriter = %s, segments %q, lines %d, want %s, none, 1", res.Signal, segmentsText(res.Segments), res.LinesWritten, lang.SigSuccess)
	}
	if got, want := readTree(t, p.worktree), "src/deep/main.go: package main\n|\n"; got != want {
		t.Errorf("worktree = %q, want %q", got, want)
	}
	if got := readTree(t, p.dirs.Workspace); got != "" {
		t.Errorf("workspace = %q, want nothing written there", got)
	}
}

func TestFileSystemWriterContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		segs     func(t *testing.T) []step.Segment
		tree     string
		lines    int
		ignored  bool // no segment to write
		wantFail string
	}{
		{
			name: "fences stripped",
			segs: func(t *testing.T) []step.Segment {
				return []step.Segment{fileSeg(t, step.SegCodeOutput, "a.go", "Here is the file:\n```go\npackage a\n\nfunc A() {}\n```\nDone.")}
			},
			tree: "a.go: package a\n\nfunc A() {}\n|\n", lines: 3,
		},
		{
			name: "multiple segments and lists",
			segs: func(t *testing.T) []step.Segment {
				return []step.Segment{
					fileSeg(t, step.SegCodeOutput, "a.go", "package a", "b/b.go", "package b\n"),
					{Type: "AI_RESPONSE", Content: "not a write segment"},
					fileSeg(t, step.SegDocOutput, "docs/README.md", "# Readme\n\n```sh\nmake\n```\n"),
					fileSeg(t, step.SegCodeOutput, "a.go", "package a // v2"),
				}
			},
			tree:  "a.go: package a // v2\n|\nb/b.go: package b\n|\ndocs/README.md: # Readme\n\n```sh\nmake\n```\n|\n",
			lines: 1 + 1 + 5 + 1,
		},
		{
			name: "markdown loses only a wrapping fence",
			segs: func(t *testing.T) []step.Segment {
				return []step.Segment{fileSeg(t, step.SegDocOutput, "x.md", "```markdown\n# X\n```go\ny\n```\n```")}
			},
			tree: "x.md: # X\n```go\ny\n```\n|\n", lines: 4,
		},
		{
			name: "fenced JSON content tolerated",
			segs: func(t *testing.T) []step.Segment {
				return []step.Segment{{Type: step.SegCodeOutput, Content: "Sure!\n```json\n{\"filePath\": \"c.txt\", \"fileContent\": \"c\"}\n```"}}
			},
			tree: "c.txt: c\n|\n", lines: 1,
		},
		{
			name: "empty file",
			segs: func(t *testing.T) []step.Segment {
				return []step.Segment{fileSeg(t, step.SegCodeOutput, "empty.txt", "")}
			},
			tree: "empty.txt: |\n", lines: 0,
		},
		{
			name:    "no write segments",
			segs:    func(t *testing.T) []step.Segment { return []step.Segment{{Type: "AI_RESPONSE", Content: "hi"}} },
			ignored: true,
		},
		{
			name: "content not JSON",
			segs: func(t *testing.T) []step.Segment {
				return []step.Segment{{Type: step.SegCodeOutput, Content: "package main"}}
			},
			wantFail: "segment 1 (CODE_OUTPUT): content is not JSON",
		},
		{
			name: "missing fileContent",
			segs: func(t *testing.T) []step.Segment {
				return []step.Segment{{Type: step.SegCodeOutput, Content: `[{"filePath": "ok.go", "fileContent": "x"}, {"filePath": "b.go"}]`}}
			},
			wantFail: "segment 1 (CODE_OUTPUT): file 2 ('b.go') has no 'fileContent'",
		},
		{
			name: "code and explanation is not a write segment",
			segs: func(t *testing.T) []step.Segment {
				return []step.Segment{{Type: step.SegCodeOutput, Content: `{"code": "x", "explanation": "y"}`}}
			},
			wantFail: "segment 1 (CODE_OUTPUT): file 1 has no 'filePath'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newIWProject(t)
			res := runIW(t, p.request(lang.InternalFileSystemWriter, tt.segs(t)...))
			if tt.wantFail != "" {
				if res.Signal != lang.SigFailure || len(res.Segments) != 1 || res.Segments[0].Type != step.SegError || !strings.HasPrefix(res.Segments[0].Content, tt.wantFail) {
					t.Errorf("FileSystemWriter = %s, segments %q, want %s and an ERROR starting %q", res.Signal, segmentsText(res.Segments), lang.SigFailure, tt.wantFail)
				}
				// The step's error says what failed: the console and status
				// show it, not "failed with exit code -1".
				if res.Err == nil || !strings.HasPrefix(res.Err.Error(), tt.wantFail) {
					t.Errorf("FileSystemWriter Err = %v, want one starting %q", res.Err, tt.wantFail)
				}
				if got := readTree(t, p.worktree); got != "" {
					t.Errorf("worktree = %q, want nothing written", got)
				}
				return
			}
			if res.Signal != lang.SigSuccess || len(res.Segments) != 0 {
				t.Fatalf("FileSystemWriter = %s, segments %q, want %s", res.Signal, segmentsText(res.Segments), lang.SigSuccess)
			}
			if got := readTree(t, p.worktree); got != tt.tree {
				t.Errorf("worktree = %q, want %q", got, tt.tree)
			}
			if res.LinesWritten != tt.lines {
				t.Errorf("LinesWritten = %d, want %d", res.LinesWritten, tt.lines)
			}
		})
	}
}

// TestFileSystemWriterWriteErrorStops: a failed write (its parent is a
// regular file) fails the step with the I/O error; the files before it are
// written, the ones after are not.
func TestFileSystemWriterWriteErrorStops(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	if err := os.WriteFile(filepath.Join(p.worktree, "blocker"), []byte("file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := p.request(lang.InternalFileSystemWriter,
		fileSeg(t, step.SegCodeOutput, "first.go", "one", "blocker/x.go", "two"),
		fileSeg(t, step.SegCodeOutput, "later.go", "three"))
	res := runIW(t, req)
	if res.Signal != lang.SigFailure || len(res.Segments) != 1 || res.Segments[0].Type != step.SegError {
		t.Fatalf("FileSystemWriter = %s, segments %q, want %s and one ERROR", res.Signal, segmentsText(res.Segments), lang.SigFailure)
	}
	if got, want := res.Segments[0].Content, "write 'blocker/x.go': "; !strings.HasPrefix(got, want) || len(got) == len(want) {
		t.Errorf("ERROR = %q, want %q and the I/O error", got, want)
	}
	// The I/O failure carries a code (issue 8, point 11).
	if se, ok := res.Err.(*source.Error); !ok || se.Code != source.EExec {
		t.Errorf("Err = %v, want E_EXEC", res.Err)
	}
	if got, want := readTree(t, p.worktree), "blocker: file\n|\nfirst.go: one\n|\n"; got != want {
		t.Errorf("worktree = %q, want %q", got, want)
	}
	if res.LinesWritten != 1 {
		t.Errorf("LinesWritten = %d, want 1", res.LinesWritten)
	}
}

// TestFileSystemWriterPathEscape: a path violation anywhere fails the step
// with E_PATH_ESCAPE before any file is written.
func TestFileSystemWriterPathEscape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, want string
	}{
		{"absolute", "/tmp/evil.go", "path '/tmp/evil.go' is absolute"},
		{"dot dot", "../../../../evil.go", "path '../../../../evil.go' resolves outside the project"},
		{"symlink", "link/evil.go", "path 'link/evil.go' passes through the symlink 'link'"},
		{"out of the worktree", "../../../workspace/x.go", "path '../../../workspace/x.go' resolves outside the workspace"},
		{"into another run's state", "../../runs/r1/state.json", "resolves outside the workspace"},
		{"git config", ".git/config", "path '.git/config' has the component '.git'"},
		{"git config upper", ".GIT/config", "path '.GIT/config' has the component '.GIT'"},
		{"git file", "sub/.git", "path 'sub/.git' has the component '.git'"},
		{"git hook", "sub/.Git/hooks/post-commit", "path 'sub/.Git/hooks/post-commit' has the component '.Git'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newIWProject(t)
			outside := t.TempDir()
			if err := os.Symlink(outside, filepath.Join(p.worktree, "link")); err != nil {
				t.Fatal(err)
			}
			req := p.request(lang.InternalFileSystemWriter,
				fileSeg(t, step.SegCodeOutput, "good.go", "package good"),
				fileSeg(t, step.SegCodeOutput, tt.path, "evil"))
			res := runIW(t, req)
			if res.Signal != lang.SigFailure || codeOf(res.Err) != source.EPathEscape {
				t.Errorf("FileSystemWriter(%q) = %s, err %v, want %s, E_PATH_ESCAPE", tt.path, res.Signal, res.Err, lang.SigFailure)
			}
			if len(res.Segments) != 1 || res.Segments[0].Type != step.SegError || !strings.Contains(res.Segments[0].Content, tt.want) {
				t.Errorf("FileSystemWriter(%q) segments = %q, want an ERROR containing %q", tt.path, segmentsText(res.Segments), tt.want)
			}
			if got := readTree(t, p.worktree); got != "" {
				t.Errorf("worktree = %q, want nothing written", got)
			}
			if got := readTree(t, outside) + readTree(t, p.dirs.Workspace); got != "" {
				t.Errorf("outside the worktree = %q, want nothing written", got)
			}
		})
	}
}

func TestDocumentationWriter(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	req := p.request(lang.InternalDocumentationWriter,
		fileSeg(t, step.SegDocOutput, "docs/api.md", "Of course, here is the documentation for the module.\n\nIt covers everything:\n\n## API\n\nCall `Run`.\n\nLet me know if you need more!"),
		fileSeg(t, step.SegDocOutput, "docs/fm.md", "```markdown\n---\nid: fm\n---\n# FM\n```"),
		fileSeg(t, step.SegCodeOutput, "code.go", "package code"))
	res := runIW(t, req)
	if res.Signal != lang.SigSuccess || len(res.Segments) != 0 {
		t.Fatalf("DocumentationWriter = %s, segments %q, want %s", res.Signal, segmentsText(res.Segments), lang.SigSuccess)
	}
	want := "docs/api.md: ## API\n\nCall `Run`.\n|\ndocs/fm.md: ---\nid: fm\n---\n# FM\n|\n"
	if got := readTree(t, p.worktree); got != want {
		t.Errorf("worktree = %q, want %q", got, want)
	}
	if res.LinesWritten != 3+4 {
		t.Errorf("LinesWritten = %d, want 7", res.LinesWritten)
	}
}

func TestPreambleValidator(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"front.md":     "---\nid: doc-1\ndescription: \"The API guide\"\nowner: docs\n---\n# Guide\n",
		"jsdoc.ts":     "/**\n * @id util-1\n * @description Helpers for\n *   string handling.\n */\nexport {}\n",
		"lines.go":     "#!/usr/bin/env gorun\n// id: main-1\n// description: The entry point\npackage main\n",
		"py.py":        "\"\"\"\nid: py-1\ndescription: >\n  Folded\n  text\n\"\"\"\n",
		"no_desc.md":   "---\nid: doc-2\n---\n",
		"empty_id.go":  "// id:\n// description: x\n",
		"none.txt":     "just text\n",
		"unclosed.md":  "---\nid: x\ndescription: y\n",
		"upper_key.go": "// ID: k\n// Description: d\n",
	}
	p := newIWProject(t)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(p.worktree, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, content, signal, problem string
		code                           source.Code
	}{
		{"front matter", "front.md", lang.SigSuccess, "", ""},
		{"jsdoc with continuation", "jsdoc.ts", lang.SigSuccess, "", ""},
		{"line comments after shebang", "lines.go", lang.SigSuccess, "", ""},
		{"docstring with folded value", "py.py", lang.SigSuccess, "", ""},
		{"keys are case-insensitive", "upper_key.go", lang.SigSuccess, "", ""},
		{"JSON filePath", `{"filePath": "front.md"}`, lang.SigSuccess, "", ""},
		{"fenced path", "```\nfront.md\n```", lang.SigSuccess, "", ""},
		{"missing description", "no_desc.md", lang.SigValidationFail, "preamble of 'no_desc.md': /description: missing required property 'description'", ""},
		{"empty id", "empty_id.go", lang.SigValidationFail, "preamble of 'empty_id.go': /id: minLength: got 0, want 1", ""},
		{"no preamble", "none.txt", lang.SigValidationFail, "file 'none.txt' has no preamble", ""},
		{"unclosed front matter", "unclosed.md", lang.SigValidationFail, "file 'unclosed.md' has no preamble", ""},
		{"missing file", "gone.md", lang.SigValidationFail, "file 'gone.md' cannot be read: no such file or directory", ""},
		{"escape", "../../../../etc/passwd", lang.SigValidationFail, "path '../../../../etc/passwd' resolves outside the project", source.EPathEscape},
		{"not a file name", "line one\nline two", lang.SigValidationFail, "the last segment does not name a file", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := runIW(t, p.request(lang.InternalPreambleValidator, step.Segment{Type: "X", Content: "ignored.md"}, step.Segment{Type: "FILE", Content: tt.content}))
			if res.Signal != tt.signal || codeOf(res.Err) != tt.code {
				t.Errorf("PreambleValidator(%q) = %s, err %v, want %s, code %q", tt.content, res.Signal, res.Err, tt.signal, tt.code)
			}
			if tt.problem == "" {
				if len(res.Segments) != 0 {
					t.Errorf("PreambleValidator(%q) segments = %q, want none", tt.content, segmentsText(res.Segments))
				}
				return
			}
			if len(res.Segments) != 1 || res.Segments[0].Type != step.SegValidationError || !strings.HasPrefix(res.Segments[0].Content, reply.ValidationFailPrefix+tt.problem) {
				t.Errorf("PreambleValidator(%q) segments = %q, want a VALIDATION_ERROR %q", tt.content, segmentsText(res.Segments), reply.ValidationFailPrefix+tt.problem)
			}
		})
	}
}

func TestPreambleValidatorEmptyPayload(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	res := runIW(t, p.request(lang.InternalPreambleValidator))
	if res.Signal != lang.SigValidationFail || len(res.Segments) != 1 || res.Segments[0].Type != step.SegValidationError {
		t.Errorf("PreambleValidator() = %s, segments %q, want %s and a VALIDATION_ERROR", res.Signal, segmentsText(res.Segments), lang.SigValidationFail)
	}
}

func TestExtractPreamble(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		found          bool
	}{
		{"front matter", "\n---\nid: a\ndescription: 'b c'\n---\nbody", `{"description":"b c","id":"a"}`, true},
		{"front matter ends with dots", "---\nid: a\n...\n", `{"id":"a"}`, true},
		{"block comment one line", "/* id: x */", `{"id":"x"}`, true},
		{"block comment stars", "/**\n * id: x\n * description: y\n */", `{"description":"y","id":"x"}`, true},
		{"first key wins", "// id: 1\n// id: 2", `{"id":"1"}`, true},
		{"blank line ends a value", "---\nid: a\n\nstray\n---", `{"id":"a"}`, true},
		{"hash comments", "# id: s\n# description: t\necho", `{"description":"t","id":"s"}`, true},
		{"bom", "\ufeff// id: b", `{"id":"b"}`, true},
		{"no fields", "// hello world", `{}`, true},
		{"code first", "package x\n// id: a", "", false},
		{"unclosed block", "/* id: a", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fields, found := extractPreamble(tt.in)
			got := ""
			if found {
				b, _ := json.Marshal(fields)
				got = string(b)
			}
			if got != tt.want || found != tt.found {
				t.Errorf("extractPreamble(%q) = %s, %v, want %s, %v", tt.in, got, found, tt.want, tt.found)
			}
		})
	}
}

// TestFileSystemWriterFolderPath: a filePath that names a folder ("out/",
// ".", "out/.") fails the step with an ERROR segment before any file is
// written; "out/" is not written as a file called out.
func TestFileSystemWriterFolderPath(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"out/", ".", "out/.", "out/sub/"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			p := newIWProject(t)
			req := p.request(lang.InternalFileSystemWriter,
				fileSeg(t, step.SegCodeOutput, "good.go", "package good"),
				fileSeg(t, step.SegCodeOutput, path, "x"))
			res := runIW(t, req)
			want := "file 1 ('" + path + "') names a folder, not a file"
			if res.Signal != lang.SigFailure || len(res.Segments) != 1 || res.Segments[0].Type != step.SegError || !strings.Contains(res.Segments[0].Content, want) {
				t.Errorf("FileSystemWriter(%q) = %s, segments %q, want %s and an ERROR containing %q", path, res.Signal, segmentsText(res.Segments), lang.SigFailure, want)
			}
			if got := readTree(t, p.worktree); got != "" {
				t.Errorf("worktree = %q, want nothing written", got)
			}
		})
	}
}

// TestFileSystemWriterUnwritableName: a path no file system can hold (a
// NUL byte, a name over 255 bytes) fails the step before any file of the
// segments is written, as a folder path does: the model's files are all
// written or none.
func TestFileSystemWriterUnwritableName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 256) + ".go"
	for _, c := range []struct{ path, want string }{
		{"a\x00b.go", "file 1 has a NUL byte in its 'filePath'"},
		{"dir/" + long, "a name in its path is 259 bytes; a file system takes at most 255"},
		{long + "/x.go", "a name in its path is 259 bytes"},
	} {
		p := newIWProject(t)
		req := p.request(lang.InternalFileSystemWriter,
			fileSeg(t, step.SegCodeOutput, "good.go", "package good"),
			fileSeg(t, step.SegCodeOutput, c.path, "x"))
		res := runIW(t, req)
		if res.Signal != lang.SigFailure || len(res.Segments) != 1 || !strings.Contains(res.Segments[0].Content, c.want) {
			t.Errorf("FileSystemWriter(%q) = %s, segments %q, want %s and an ERROR containing %q", c.path, res.Signal, segmentsText(res.Segments), lang.SigFailure, c.want)
		}
		if got := readTree(t, p.worktree); got != "" {
			t.Errorf("FileSystemWriter(%q) wrote %q, want nothing", c.path, got)
		}
		if code := source.CodeOf(res.Err, ""); code != source.EExec {
			t.Errorf("FileSystemWriter(%q): code %q, want E_EXEC (a name no file system can write)", c.path, code)
		}
	}
}
