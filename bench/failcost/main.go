// Command failcost measures what a failing model server costs one step of
// each agent CLI preset (CONTRACT 5, "Retries stay bounded"): the real
// claude, gemini and codex, set up as a user sets them up (their own HOME,
// settings and model provider) and with home: isolated, each against the
// fake model server answering every request with HTTP 500 (then 429). It
// prints, per CLI, mode and status, the median wall time of a one-step run
// of smithvm (attempts: 1) and the requests that reached the server.
//
//	go run ./bench/failcost [-runs 5] [-clis DIR] [-smithvm PATH]
//
// DIR holds the CLIs (default ~/.cache/smith-clis/node_modules/.bin, as
// .ci/run installs them). A benchmark, not a test: it prints figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"smith/internal/fakemodel"
)

func main() {
	home, _ := os.UserHomeDir()
	runs := flag.Int("runs", 5, "runs of each case")
	dir := flag.String("clis", filepath.Join(home, ".cache", "smith-clis", "node_modules", ".bin"), "the folder of the claude, gemini and codex programs")
	smithvm := flag.String("smithvm", "", "the smithvm binary (default: built from ./cmd/smithvm)")
	flag.Parse()
	if err := run(*runs, *dir, *smithvm); err != nil {
		fmt.Fprintln(os.Stderr, "failcost:", err)
		os.Exit(1)
	}
}

func run(runs int, dir, smithvm string) error {
	tmp, err := os.MkdirTemp("", "failcost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if smithvm == "" {
		smithvm = filepath.Join(tmp, "smithvm")
		if out, err := exec.Command("go", "build", "-o", smithvm, "./cmd/smithvm").CombinedOutput(); err != nil {
			return fmt.Errorf("build smithvm: %v\n%s", err, out)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("date %s, load %s", time.Now().UTC().Format(time.RFC3339), load)
	fmt.Printf("%-7s %-9s %-6s %10s %10s  %s\n", "cli", "home", "status", "median s", "requests", "all runs (s)")
	for _, status := range []int{500, 429} {
		for _, c := range fakemodel.CLIs {
			for _, mode := range []string{"user", "isolated"} {
				var times []float64
				var reqs []int
				for i := range runs {
					t, n, err := once(tmp, smithvm, dir, c, mode, status, i)
					if err != nil {
						return err
					}
					times, reqs = append(times, t), append(reqs, n)
				}
				sorted := slices.Clone(times)
				slices.Sort(sorted)
				var all []string
				for _, t := range times {
					all = append(all, fmt.Sprintf("%.2f", t))
				}
				fmt.Printf("%-7s %-9s %-6d %10.2f %10v  %s\n", c.Name, mode, status, sorted[len(sorted)/2], reqs, strings.Join(all, " "))
			}
		}
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("load at the end %s", load)
	return nil
}

// once runs one failing step and returns its wall time and the requests
// the server saw.
func once(tmp, smithvm, dir string, c fakemodel.CLI, mode string, status, i int) (float64, int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := fakemodel.Start(ctx, []fakemodel.Rule{{Reply: fakemodel.Reply{Status: status}}}, fakemodel.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer srv.Close()
	base := filepath.Join(tmp, fmt.Sprintf("%s-%s-%d-%d", c.Name, mode, status, i))
	home := filepath.Join(base, "home")
	files := map[string]string{
		".claude/settings.json": `{"env": {"ANTHROPIC_BASE_URL": "` + srv.URL + `"}}`,
		".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`,
		".codex/config.toml": "model_provider = \"gateway\"\n[model_providers.gateway]\nname = \"gateway\"\nbase_url = \"" + srv.URL +
			"/v1\"\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"responses\"\n",
		"workspace/.keep": "",
	}
	for rel, text := range files {
		p := filepath.Join(base, rel)
		if rel[0] == '.' {
			p = filepath.Join(home, rel)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return 0, 0, err
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return 0, 0, err
		}
	}
	wf := "version: \"1.0\"\nname: failcost\nstrict_flow: false\n"
	if mode == "isolated" {
		wf += "providers:\n  " + c.Name + ": {home: isolated}\n"
	}
	wf += "steps:\n  - name: Ask\n    provider: " + c.Name + "\n    model: " + c.Model + "\n    prompt: hello\n    timeout: 300\n"
	if err := os.WriteFile(filepath.Join(base, "wf.yaml"), []byte(wf), 0o644); err != nil {
		return 0, 0, err
	}
	env := []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "HOME=" + home,
		"ANTHROPIC_API_KEY=fake-key-anthropic-0123", "GEMINI_API_KEY=fake-key-gemini-0123", "GATEWAY_API_KEY=fake-key-gateway-0123",
		"OPENAI_API_KEY=fake-key-openai-0123", "GOOGLE_GEMINI_BASE_URL=" + srv.URL}
	if mode == "isolated" {
		env = append(env, "ANTHROPIC_BASE_URL="+srv.URL, "OPENAI_BASE_URL="+srv.URL+"/v1")
	}
	cmd := exec.Command(smithvm, "run", filepath.Join(base, "wf.yaml"), "--base", base)
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Seconds()
	if err == nil {
		return 0, 0, fmt.Errorf("%s %s: the run succeeded against a failing server:\n%s", c.Name, mode, out)
	}
	n := 0
	for _, l := range srv.Requests() {
		if l.Protocol == c.Protocol {
			n++
		}
	}
	return took, n, nil
}
