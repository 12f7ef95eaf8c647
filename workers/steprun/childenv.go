package steprun

import "smith/workers/step"

// inheritedEnv lists the variables of the parent's environment that every child
// receives when they are set, in this order (CONTRACT.md section 3.5).
var inheritedEnv = [...]string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "SHELL",
}

// BuildEnv builds a child's whole environment as "K=V" strings: the inherited
// variables (PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TERM, TZ,
// TMPDIR, SHELL) that lookup finds, then each name in allow that lookup finds,
// then secrets, then stepEnv. A later entry overrides an earlier one with the
// same name, which keeps the position of its first appearance, so the result has
// no duplicate names; but a stepEnv entry named as a secret is dropped, so the
// secret keeps its value (CONTRACT 3.5, seed 004) and stays masked. lookup is the parent's environment (os.LookupEnv, passed
// in by cmd); nothing else of it reaches the child.
func BuildEnv(lookup func(string) (string, bool), allow []string, secrets []step.EnvVar, stepEnv []step.EnvVar) []string {
	var (
		names  []string
		values = map[string]string{}
	)
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	fromParent := func(name string) {
		if lookup == nil {
			return
		}
		if v, ok := lookup(name); ok {
			set(name, v)
		}
	}
	for _, name := range inheritedEnv {
		fromParent(name)
	}
	for _, name := range allow {
		fromParent(name)
	}
	secret := make(map[string]bool, len(secrets))
	for _, v := range secrets {
		set(v.Name, v.Value)
		secret[v.Name] = true
	}
	for _, v := range stepEnv {
		if !secret[v.Name] {
			set(v.Name, v.Value)
		}
	}
	env := make([]string, 0, len(names))
	for _, name := range names {
		env = append(env, name+"="+values[name])
	}
	return env
}
