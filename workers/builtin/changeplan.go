package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"smith/lang"
	"smith/workers/confine"
	"smith/workers/reply"
	"smith/workers/step"
)

// Change plans (Internal:UpdateChangePlan, CONTRACT.md section 8). A run's
// change plan is the sorted list of distinct paths (relative to the
// worktree, with forward slashes) it intends to change, kept in
// RUN_ROOT/changeplan.json as a JSON array and replaced atomically. The
// conflict scan compares a run's whole plan with the plans of every other
// active run: one whose RUN_ROOT/state.json has "status" "running" or
// "halted".

// changePlanFile is the name of a run's change plan under RUN_ROOT.
const changePlanFile = "changeplan.json"

// A changePlanner records paths in a run's change plan and reports the
// conflicts; *ChangePlanStore is the real one, tests use fakes.
type changePlanner interface {
	Add(runID string, paths []string) ([]step.Conflict, error)
}

// A ChangePlanStore keeps the change plans of the runs under RunsDir
// (BASE/.orchestrator/runs), one directory per run.
type ChangePlanStore struct {
	RunsDir string
	// Changed returns the files a run has actually changed (its branch's
	// diff against its start, CONTRACT 12.4); nil means none are known.
	Changed func(runID string) []string
}

var _ changePlanner = ChangePlanStore{}

// ChangePlan returns the change plan saved under runRoot: nil when it has
// none.
func ChangePlan(runRoot string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(runRoot, changePlanFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read change plan: %w", err)
	}
	var plan []string
	if err := json.Unmarshal(b, &plan); err != nil {
		return nil, fmt.Errorf("read change plan %s: %w", filepath.Join(runRoot, changePlanFile), err)
	}
	return plan, nil
}

// Add adds paths to the change plan of runID, saves it, and returns the
// active runs (other than runID) whose plans share paths with it, sorted by
// run id. Paths are cleaned (path.Clean, forward slashes); the caller has
// confined them.
func (s ChangePlanStore) Add(runID string, paths []string) ([]step.Conflict, error) {
	if runID == "" || runID == "." || runID == ".." || strings.ContainsAny(runID, `/\`) {
		return nil, fmt.Errorf("add to change plan: bad run id '%s'", runID)
	}
	root := filepath.Join(s.RunsDir, runID)
	plan, err := ChangePlan(root)
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		plan = append(plan, path.Clean(filepath.ToSlash(p)))
	}
	slices.Sort(plan)
	plan = slices.Compact(plan)
	if err := writePlan(root, plan); err != nil {
		return nil, err
	}
	cs, err := s.conflicts(runID, s.withChanged(runID, plan))
	if err != nil {
		return nil, err
	}
	// Every run involved hears of it at its next step, not only this one.
	for _, c := range cs {
		_ = appendNotice(filepath.Join(s.RunsDir, c.Run), step.Conflict{Run: runID, Paths: c.Paths})
	}
	return cs, nil
}

// withChanged is plan with the files run runID actually changed, sorted
// without repeats.
func (s ChangePlanStore) withChanged(runID string, plan []string) []string {
	if s.Changed == nil {
		return plan
	}
	out := append(slices.Clone(plan), s.Changed(runID)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// conflicts scans the other active runs' plans for paths in plan.
func (s ChangePlanStore) conflicts(runID string, plan []string) ([]step.Conflict, error) {
	entries, err := os.ReadDir(s.RunsDir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("scan runs: %w", err)
	}
	var out []step.Conflict
	for _, e := range entries {
		if !e.IsDir() || e.Name() == runID {
			continue
		}
		root := filepath.Join(s.RunsDir, e.Name())
		state, err := os.ReadFile(filepath.Join(root, "state.json"))
		if err != nil {
			continue // not a run, or one that has not saved state yet
		}
		switch gjson.GetBytes(state, "status").String() {
		case "running", "halted":
		default:
			continue
		}
		other, err := ChangePlan(root)
		if err != nil {
			continue // a damaged plan of another run does not stop this one
		}
		other = s.withChanged(e.Name(), other)
		var shared []string
		for _, p := range other {
			if _, found := slices.BinarySearch(plan, p); found {
				shared = append(shared, p)
			}
		}
		if len(shared) > 0 {
			slices.Sort(shared)
			out = append(out, step.Conflict{Run: e.Name(), Paths: slices.Compact(shared)})
		}
	}
	return out, nil
}

// writePlan saves plan under root atomically.
func writePlan(root string, plan []string) error {
	if plan == nil {
		plan = []string{}
	}
	b, err := json.Marshal(plan)
	if err != nil {
		return fmt.Errorf("save change plan: %w", err)
	}
	if err := confine.WriteFileAtomic(filepath.Join(root, changePlanFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save change plan: %w", err)
	}
	return nil
}

// runUpdateChangePlan is Internal:UpdateChangePlan.
func runUpdateChangePlan(ctx context.Context, e Env, req *step.Request) step.Result {
	// In YAML the previous step's reply lists the files (CONTRACT 12.5).
	if res, ok := replyPayload(req, step.SegNewFiles); !ok {
		return res
	}
	if req.RunRoot == "" {
		l := &segmentList{req: req}
		l.add(step.SegError, "UpdateChangePlan: the run has no run directory; the change plan was not saved")
		return l.result(lang.SigSuccess, 0, nil)
	}
	root := filepath.Clean(req.RunRoot)
	dirs := req.Dirs
	var changed func(runID string) []string
	if e.Changed != nil {
		changed = func(runID string) []string { return e.Changed(ctx, dirs, runID) }
	}
	return updateChangePlan(req, filepath.Base(root), ChangePlanStore{RunsDir: filepath.Dir(root), Changed: changed})
}

// updateChangePlan reads the paths of every NEW_FILES_IDENTIFIED segment
// (a JSON array of relative paths; fences and chatter around it are
// tolerated), checks each with confine.Lexical, hands the good ones to
// planner and reports overlaps with other active runs in one CONFLICT
// segment {"paths": [...], "runs": [...]} (both sorted). It always returns
// SIGNAL:SUCCESS (seed 001); a segment it cannot read, a bad path or a
// failure to save adds an ERROR segment instead.
func updateChangePlan(req *step.Request, runID string, planner changePlanner) step.Result {
	l := &segmentList{req: req}
	var paths []string
	seen := false
	for i, seg := range req.Payload {
		if seg.Type != step.SegNewFiles {
			continue
		}
		seen = true
		list, err := parsePathList(seg.Content)
		if err != nil {
			l.add(step.SegError, fmt.Sprintf("segment %d (%s): %v", i+1, step.SegNewFiles, err))
			continue
		}
		for _, p := range list {
			if err := confine.Lexical(p); err != nil {
				l.add(step.SegError, fmt.Sprintf("segment %d (%s): %v; it was not added to the change plan", i+1, step.SegNewFiles, err))
				continue
			}
			if !filepath.IsLocal(p) {
				l.add(step.SegError, fmt.Sprintf("segment %d (%s): path '%s' leaves the worktree; it was not added to the change plan", i+1, step.SegNewFiles, p))
				continue
			}
			paths = append(paths, p)
		}
	}
	if !seen {
		l.add(step.SegError, fmt.Sprintf("the payload has no %s segment; the change plan is unchanged", step.SegNewFiles))
		return l.result(lang.SigSuccess, 0, nil)
	}
	conflicts, err := planner.Add(runID, paths)
	if err != nil {
		l.add(step.SegError, err.Error())
		return l.result(lang.SigSuccess, 0, nil)
	}
	if len(conflicts) > 0 {
		var c struct {
			Paths []string `json:"paths"`
			Runs  []string `json:"runs"`
		}
		for _, x := range conflicts {
			c.Runs = append(c.Runs, x.Run)
			c.Paths = append(c.Paths, x.Paths...)
		}
		slices.Sort(c.Paths)
		c.Paths = slices.Compact(c.Paths)
		slices.Sort(c.Runs)
		l.add(step.SegConflict, toolJSON(c))
	}
	res := l.result(lang.SigSuccess, 0, nil)
	res.Output = fmt.Sprintf("added %d path(s) to the change plan", len(paths))
	return res
}

// parsePathList reads a JSON array of strings, through the cleaner when the
// content is not JSON as a whole.
func parsePathList(content string) ([]string, error) {
	text, ok := reply.JSONText(content)
	if !ok {
		return nil, errors.New("content is not a JSON array of paths")
	}
	var list []string
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return nil, fmt.Errorf("content is not a JSON array of paths: %v", err)
	}
	return list, nil
}
