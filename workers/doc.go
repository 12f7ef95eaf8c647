// Package workers runs the units of work of a Smith program: processes,
// providers, internal workers.
package workers
