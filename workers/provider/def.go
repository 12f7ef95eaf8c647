package provider

import "smith/workers/step"

// The provider fields of a step.Request live in workers/step, which the VM
// fills without importing a worker; these are their names here.
type (
	Def       = step.ProviderDef
	Param     = step.ProviderParam
	Transport = step.Transport
)
