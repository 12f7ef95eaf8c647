// Package text holds the pure string code that the VM and the workers
// share: the Masker that replaces secret values in everything captured or
// shown, and Excerpt, which cuts captured output for state.json.
//
// It is a leaf: it imports the standard library only, does no I/O, and
// knows nothing of steps, processes or providers, so the process runner
// (workers/proc) and the VM can both use it.
package text
