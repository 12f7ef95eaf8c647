package provider

import "smith/workers/proc"

// A Param is one provider template key and its value.
type Param struct{ Key, Value string }

// A Transport says how a prompt reaches a provider: argv, stdin or temp_file.
type Transport struct {
	Mode         string
	ArgvTemplate []string
}

// A Def is a workflow's own provider (or an override of a preset).
type Def struct {
	Name      string
	Command   []string
	Defaults  []Param
	Transport *Transport
	// Env and Secrets reach only this provider's processes, on top of the
	// step's environment (CONTRACT 5): Env substituted, Secrets with values.
	Env     []proc.EnvVar
	Secrets []proc.EnvVar
	// Isolated (home: isolated) gives a preset's CLI a fresh config home
	// under RUN_ROOT/providers/NAME instead of the user's own (CONTRACT 5).
	Isolated bool
}
