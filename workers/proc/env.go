package proc

// inheritedEnv lists the variables of the parent's environment that every child
// receives when they are set, in this order (CONTRACT.md section 3.5).
var inheritedEnv = [...]string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "SHELL",
}

// An EnvVar is one environment variable for a child process.
type EnvVar struct {
	Name, Value string
}

// BuildEnv builds a child's whole environment as "K=V" strings: the inherited
// variables (PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TERM, TZ,
// TMPDIR, SHELL) that lookup finds, then each name in allow that lookup finds,
// then secrets, then stepEnv. A later entry overrides an earlier one with the
// same name, which keeps the position of its first appearance, so the result has
// no duplicate names. lookup is the parent's environment (os.LookupEnv, passed
// in by cmd); nothing else of it reaches the child.
func BuildEnv(lookup func(string) (string, bool), allow []string, secrets []EnvVar, stepEnv []EnvVar) []string {
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
	for _, v := range secrets {
		set(v.Name, v.Value)
	}
	for _, v := range stepEnv {
		set(v.Name, v.Value)
	}
	env := make([]string, 0, len(names))
	for _, name := range names {
		env = append(env, name+"="+values[name])
	}
	return env
}
