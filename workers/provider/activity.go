package provider

import (
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// The kinds of an agent's activity (CONTRACT 13, "watch a step while it
// runs"), as its CLI streams them.
const (
	ActMessage = "message" // the model said something
	ActTool    = "tool"    // a tool call that is none of the below
	ActCommand = "command" // a shell command
	ActRead    = "read"    // a file read or search
	ActEdit    = "edit"    // a file written or changed
)

// An Act is one thing an agent did: its kind and a short one-line summary
// (a command line, a path, the start of a message). The caller masks it.
type Act struct {
	Kind, Text string
}

// actMax bounds an Act's summary.
const actMax = 200

// An ActivityReader turns the lines of a preset's streamed stdout into
// Acts. It keeps what a stream spreads over several lines (gemini sends a
// message in pieces). Not safe for concurrent use.
type ActivityReader struct {
	read func(a *ActivityReader, ev gjson.Result) []Act // the CLI's (CLI.activity)
	cwd  string
	msg  strings.Builder // gemini: the message being streamed
	seen map[string]bool // codex: items already reported at their start
}

// NewActivityReader returns a reader of pv's stream, nil when pv's stdout
// is no stream of events (a workflow's own provider, the mock). Paths
// under cwd are shown relative to it.
func NewActivityReader(pv Provider, cwd string) *ActivityReader {
	if pv.CLI == nil || pv.CLI.activity == nil {
		return nil
	}
	return &ActivityReader{read: pv.CLI.activity, cwd: cwd, seen: map[string]bool{}}
}

// Line reads one line of the stream and returns the Acts it completes.
func (a *ActivityReader) Line(line []byte) []Act {
	s := strings.TrimSpace(string(line))
	if !strings.HasPrefix(s, "{") || !gjson.Valid(s) {
		return nil
	}
	ev := gjson.Parse(s)
	return a.read(a, ev)
}

// Flush returns what the stream left unfinished (a message whose end never
// came).
func (a *ActivityReader) Flush() []Act {
	return a.endMessage(nil)
}

// claude: {"type":"assistant","message":{"content":[{"type":"text",
// "text"}|{"type":"tool_use","name","input"}]}}.
func (a *ActivityReader) claude(ev gjson.Result) []Act {
	if ev.Get("type").String() != "assistant" {
		return nil
	}
	var out []Act
	ev.Get("message.content").ForEach(func(_, c gjson.Result) bool {
		switch c.Get("type").String() {
		case "text":
			if t := strings.TrimSpace(c.Get("text").String()); t != "" {
				out = append(out, Act{ActMessage, short(t)})
			}
		case "tool_use":
			out = append(out, a.tool(c.Get("name").String(), c.Get("input")))
		}
		return true
	})
	return out
}

// gemini: {"type":"message","role":"assistant","content","delta":true}
// pieces, {"type":"tool_use","tool_name","parameters"}, {"type":"result"}.
func (a *ActivityReader) gemini(ev gjson.Result) []Act {
	switch ev.Get("type").String() {
	case "message":
		if ev.Get("role").String() == "assistant" && a.msg.Len() < maxActMsg {
			// Only the message's start is shown: a reply of MBs is not held.
			t := ev.Get("content").String()
			a.msg.WriteString(t[:min(len(t), maxActMsg-a.msg.Len())])
		}
		return nil
	case "tool_use":
		return a.endMessage([]Act{a.tool(ev.Get("tool_name").String(), ev.Get("parameters"))})
	case "result":
		return a.endMessage(nil)
	}
	return nil
}

// maxActMsg is the most of a streamed message kept for its Act, which
// shows its start (short).
const maxActMsg = 64 << 10

// endMessage puts the message being streamed, if any, before more.
func (a *ActivityReader) endMessage(more []Act) []Act {
	t := strings.TrimSpace(a.msg.String())
	a.msg.Reset()
	if t == "" {
		return more
	}
	return append([]Act{{ActMessage, short(t)}}, more...)
}

// codex: {"type":"item.started"|"item.completed","item":{"id","type":
// "agent_message"|"command_execution"|"file_change"|"mcp_tool_call"|
// "web_search", ...}}. A tool item is reported when it starts, a message
// when it is complete.
func (a *ActivityReader) codex(ev gjson.Result) []Act {
	kind := ev.Get("type").String()
	if kind != "item.started" && kind != "item.completed" {
		return nil
	}
	it := ev.Get("item")
	id := it.Get("id").String()
	if a.seen[id] {
		return nil
	}
	var act Act
	switch it.Get("type").String() {
	case "agent_message":
		if kind != "item.completed" {
			return nil
		}
		act = Act{ActMessage, short(it.Get("text").String())}
	case "command_execution":
		act = Act{ActCommand, short(it.Get("command").String())}
	case "file_change":
		var parts []string
		it.Get("changes").ForEach(func(_, c gjson.Result) bool {
			parts = append(parts, c.Get("kind").String()+" "+a.rel(c.Get("path").String()))
			return true
		})
		act = Act{ActEdit, short(strings.Join(parts, ", "))}
	case "mcp_tool_call":
		act = Act{ActTool, short(it.Get("server").String() + "." + it.Get("tool").String())}
	case "web_search":
		act = Act{ActTool, short("web_search " + it.Get("query").String())}
	default:
		return nil
	}
	a.seen[id] = true
	if act.Text == "" {
		return nil
	}
	return []Act{act}
}

// tool is a tool call of claude or gemini by its name and arguments.
func (a *ActivityReader) tool(name string, in gjson.Result) Act {
	path := func(keys ...string) string {
		for _, k := range keys {
			if v := in.Get(k).String(); v != "" {
				return a.rel(v)
			}
		}
		return ""
	}
	switch name {
	case "Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "replace", "edit":
		return Act{ActEdit, short(name + " " + path("file_path", "notebook_path", "path"))}
	case "Read", "read_file", "read_many_files", "list_directory", "LS":
		return Act{ActRead, short(name + " " + path("file_path", "path", "dir_path", "paths"))}
	case "Glob", "Grep", "glob", "grep_search", "search_file_content":
		return Act{ActRead, short(name + " " + in.Get("pattern").String())}
	case "Bash", "run_shell_command":
		return Act{ActCommand, short(in.Get("command").String())}
	}
	args := in.Raw
	return Act{ActTool, short(strings.TrimSpace(name + " " + args))}
}

// rel shows p relative to the agent's working directory when it is under it.
func (a *ActivityReader) rel(p string) string {
	if a.cwd == "" || !filepath.IsAbs(p) {
		return p
	}
	if r, err := filepath.Rel(a.cwd, p); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
		return r
	}
	return p
}

// short is s on one line, cut to actMax bytes at a character boundary.
func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= actMax {
		return s
	}
	cut := actMax
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
