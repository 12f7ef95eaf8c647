package steprun

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"smith/workers/step"
)

// OutputsDir is the folder of RUN_ROOT where a run keeps its own copies
// of its steps' output files: RUN_ROOT/outputs/<Step>/<output_file>.
const OutputsDir = "outputs"

// KeepOutput copies the step's output file (p.Output, written in
// WORKSPACE/artifacts/<Step>/) to RUN_ROOT/outputs/<Step>/<output_file>
// and returns the copy's path: WORKSPACE/artifacts/ is shared by every run
// of the project, so the next run overwrites it, while status, the viewer
// and ${steps.S.output_file} of a resumed run must show this run's
// (CONTRACT 6). A copy, not a hard link: a command's output file is
// rewritten in place (O_TRUNC), which would change a linked copy too. The
// copy is written to a temporary file and renamed, and read without
// following symlinks (confine). Without RUN_ROOT or an output file it
// keeps nothing.
func KeepOutput(req *step.Request, p Paths) (string, error) {
	if p.Output == "" || req.RunRoot == "" || !filepath.IsLocal(req.OutputFile) {
		return "", nil
	}
	src, err := req.Dirs.Open(p.Output)
	if err != nil {
		return "", fmt.Errorf("keep output_file '%s': %w", req.OutputFile, err)
	}
	defer src.Close()
	dst := filepath.Join(req.RunRoot, OutputsDir, req.Step, filepath.Clean(req.OutputFile))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("keep output_file '%s': %w", req.OutputFile, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".keep-*")
	if err != nil {
		return "", fmt.Errorf("keep output_file '%s': %w", req.OutputFile, err)
	}
	_, cerr := io.Copy(tmp, src)
	if err := tmp.Close(); cerr == nil {
		cerr = err
	}
	if cerr == nil {
		cerr = os.Rename(tmp.Name(), dst)
	}
	if cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("keep output_file '%s': %w", req.OutputFile, cerr)
	}
	return dst, nil
}
