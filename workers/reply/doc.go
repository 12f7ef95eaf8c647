// Package reply reads what an AI model answered: it cleans a reply of the
// chat around it (Clean, CleanPreamble, ExtractCode, ExtractJSON, CleanFile),
// finds the signal a reply names in its last line (LastLineSignal), and
// validates a reply against a JSON Schema (SchemaSet: the built-in schemas of
// lang.BuiltinSchemas and a document's own, JSON Schema 2020-12), wording
// each problem for the fix loop after ValidationFailPrefix.
//
// Its functions are pure: text in, text out. It must never read or write a
// file, start a process, fetch a schema from the network (external
// references are refused) or know how a reply was obtained (providers,
// steps, the run); and a cleaning function never fails: a reply it cannot
// improve comes back trimmed.
package reply
