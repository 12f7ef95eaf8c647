package provider

import "fmt"

// An Install says how to get a preset's CLI, so that a missing one is a
// message that says what to do (docs/getting-started.md): what the CLI is
// called, its npm package (the one testdata/clis/package.json pins), and
// what to do once it is installed.
type Install struct {
	Title, Package, Then string
}

func (i Install) String() string {
	return i.Title + ": npm install -g " + i.Package + ", then " + i.Then
}

// InstallHint says what to do about a program that is not on PATH: for a
// preset's CLI, how to install it.
func InstallHint(name string) string {
	if f, ok := clis[name]; ok {
		return fmt.Sprintf(": it is not on PATH; install %s (or try the workflow offline first with provider: mock)", f.Install)
	}
	return ": it is not on PATH; install it, or give its full path in the argv"
}
