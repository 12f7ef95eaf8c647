// Package step holds what every worker shares about one execution of a
// step: the Request the VM hands over (templates substituted, paths not yet
// confined), the Result a worker gives back (signal, exit code, output,
// payload segments, a coded error), the Runner interface between them, and
// the facts of those values (the request kinds, the segment types, the exit
// codes of a step that ran no process).
//
// It is data only: it must never perform I/O (no files, processes, network
// or clock), never run a step, and never import another package of workers
// except the leaf packages whose types a Request carries (confine, proc,
// provider).
package step
