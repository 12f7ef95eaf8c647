// Package serve is `smithvm serve`: a small web app over a BASE's run store
// (CONTRACT section 13). It lists the runs, shows one run (its graph
// coloured by state and updated live, its steps, logs, output files,
// payload and events) and resumes a halted run from a form.
//
// Everything it reads goes through the run store's lock-free reads
// (store.Read) and workers/confine; it never writes a run's files itself.
// A resume is the one action, and it is injected by the caller
// (Config.Resume) so that it runs exactly the code of `smithvm resume`.
//
// The pages are html/template and plain JavaScript, embedded with the
// Graphviz-in-WebAssembly build of @viz-js/viz (assets/viz-global.js), so
// the viewer needs no internet and no graphviz on the machine. The live view
// is server-sent events that follow logs/events.jsonl by polling: the event
// id is the event's event_seq, so a reconnecting browser (Last-Event-ID)
// gets exactly the events it missed.
package serve
