package step

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"smith/source"
)

// The values the VM and its host exchange besides a Request and its
// Result: environment entries, the provider fields of a request, a run's
// branches and commits, conflict notices. They live here, not with the
// workers that use them, so that the VM imports no worker.

// An EnvVar is one environment variable for a child process.
type EnvVar struct {
	Name, Value string
}

// A ProviderParam is one provider template key and its value.
type ProviderParam struct{ Key, Value string }

// A Transport says how a prompt reaches a provider: argv, stdin or temp_file.
type Transport struct {
	Mode         string
	ArgvTemplate []string
}

// A ProviderDef is a workflow's own provider (or an override of a preset).
type ProviderDef struct {
	Name      string
	Command   []string
	Defaults  []ProviderParam
	Transport *Transport
	// Env and Secrets reach only this provider's processes, on top of the
	// step's environment (CONTRACT 5): Env substituted, Secrets with values.
	Env     []EnvVar
	Secrets []EnvVar
	// Isolated (home: isolated) gives a preset's CLI a fresh config home
	// under RUN_ROOT/providers/NAME instead of the user's own (CONTRACT 5).
	Isolated bool
}

// A RunTree is a run's worktree as OpenRunTree found or made it.
type RunTree struct {
	Path string // BASE/.orchestrator/worktrees/<run_id>
	Base string // the run's starting commit (refs/smith-base/<run_id>)
	Head string // the commit the run's branch is at
}

// WorktreeBranch is the branch of a run's worktree.
func WorktreeBranch(runID string) string { return "smith/" + runID }

// UnitBranch is the branch of one thread's worktree: a namespace apart from
// the run's branch, since git cannot hold both smith/X and smith/X/....
func UnitBranch(runID, step, key string) string {
	return "smith-unit/" + runID + "/" + step + "/" + key
}

// CommitMessage is the message of a step's commit.
func CommitMessage(step, runID string, attempt int) string {
	return fmt.Sprintf("smith: %s (run %s, attempt %d)", step, runID, attempt)
}

// ArtifactsDir is the folder of WORKSPACE (or a worktree) that holds the
// steps' output files: WORKSPACE/artifacts/<Step>/<output_file>.
const ArtifactsDir = "artifacts"

// SendingDir is the folder beside an inbox where a message is written
// before it is renamed into the inbox, so a reader never sees half of one.
const SendingDir = ".sending"

// CommitExcludes are the paths (relative to a worktree) that a step's
// commit leaves out (CONTRACT 12.4): the agents' folders (their inboxes
// and processed folders, given, and the sending folders beside them) and,
// unless commitArtifacts, artifacts/. The branch holds the team's work,
// not its messages; no .gitignore in the repository is needed for that.
func CommitExcludes(agentFolders []string, commitArtifacts bool) []string {
	var out []string
	if !commitArtifacts {
		out = append(out, ArtifactsDir)
	}
	for _, f := range agentFolders {
		for _, p := range []string{path.Clean(f), path.Join(path.Dir(path.Clean(f)), SendingDir), path.Join(path.Dir(path.Clean(f)), ClaimsDir)} {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// A BranchError is a failure of diff, merge or clean with its code:
// E_MERGE_CONFLICT (naming the files), E_UNMERGED or E_USAGE.
type BranchError struct {
	Code  source.Code
	Msg   string
	Files []string
}

func (e *BranchError) Error() string { return string(e.Code) + ": " + e.Msg }

// ErrCode returns the error's code.
func (e *BranchError) ErrCode() source.Code { return e.Code }

// A Conflict is another active run whose change plan shares paths with this
// run's plan. Its JSON form is a line of a run's notices file.
type Conflict struct {
	Run   string   `json:"run"`   // the other run's id
	Paths []string `json:"paths"` // the shared paths, sorted
}

// Notice is the content of the CONFLICT segment that tells a run of c:
// {"paths":[...],"runs":[RUN]}.
func (c Conflict) Notice() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Paths []string `json:"paths"`
		Runs  []string `json:"runs"`
	}{c.Paths, []string{c.Run}}); err != nil {
		panic(fmt.Sprintf("internal error: encode notice: %v", err))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// PresetVars are the agent presets' own variables as a run masks them:
// Masked, every preset's masked variables (keys, tokens, endpoints,
// config homes); Keys, those of them that are credentials, which a
// change must not hold when it is committed; MinMasked, the shortest
// value that is masked (a shorter one, "1" or "eu", is no credential and
// would blank ordinary text). The table is the presets' (workers/provider);
// the VM reads it through its Host.
type PresetVars struct {
	Masked, Keys []string
	MinMasked    int
}

// Values returns the values lookup gives the masked variables, those of
// at least MinMasked bytes: what a run masks besides its secrets.
func (p PresetVars) Values(lookup func(string) (string, bool)) []string {
	var out []string
	for _, name := range p.Masked {
		if v, ok := lookup(name); ok && len(v) >= p.MinMasked {
			out = append(out, v)
		}
	}
	return out
}
