// Package bench holds Smith's benchmarks and the generators of the large
// documents they compile and run: a Node/Block manifest of many blocks, a
// YAML workflow of many steps, a chain of `true` commands and a long
// for_each. See README.md for how to run them and the numbers measured.
package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Manifest returns a workflows.json manifest of nodes Nodes of perNode
// blocks each. Nodes form a binary tree of CALLs (node i calls 2i+1 and
// 2i+2, with return_to), so every node is reachable; inside a node blocks
// chain by JUMP on SIGNAL:SUCCESS, the last block RETURNs (END in the entry
// node), some blocks map SIGNAL:FAILURE to FAIL, every block has a
// SIGNAL:FAIL_DEFAULT to HALT_AND_FLAG, and two blocks per node are AI
// workers (the mock provider) with a validation-fix loop bounded by
// max_visits.
func Manifest(nodes, perNode int) []byte {
	var b bytes.Buffer
	b.WriteString(`{
  "version": "1",
  "entry": "Node:N0",
  "config": {"test_command": ["true"], "build_command": ["true"], "isolation": "none"},
  "workers": {
    "Command:True": {"command": ["true"]},
    "Command:Echo": {"command": ["echo", "step"], "timeout": 30},
    "Worker:Gen": {"provider": "mock", "instructions": "Write the code.", "output_type": "CODE_OUTPUT"},
    "Worker:Review": {"provider": "mock", "provider_params": {"model": "m1"}, "instructions": "Review the code."}
  },
  "nodes": {`)
	for i := range nodes {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    \"Node:N%d\": {\n      \"entry_block\": \"Block:N%d_B0\",\n", i, i)
		fmt.Fprintf(&b, "      \"context_inheritance\": %t,\n", i%2 == 0)
		fmt.Fprintf(&b, "      \"static_memory\": {\"rules\": \"node %d rules\", \"n\": %d},\n", i, i)
		b.WriteString("      \"blocks\": {")
		for j := range perNode {
			if j > 0 {
				b.WriteByte(',')
			}
			manifestBlock(&b, nodes, perNode, i, j)
		}
		b.WriteString("\n      }\n    }")
	}
	b.WriteString("\n  }\n}\n")
	return b.Bytes()
}

// manifestBlock writes block j of node i.
func manifestBlock(b *bytes.Buffer, nodes, perNode, i, j int) {
	id := fmt.Sprintf("N%d_B%d", i, j)
	next := fmt.Sprintf("JUMP:N%d_B%d", i, j+1)
	last := j == perNode-1
	if last {
		next = "RETURN"
		if i == 0 {
			next = "END"
		}
	}
	var extra []string
	worker := "Command:True"
	switch {
	case j == 10 || j == 35:
		worker = "Worker:Gen"
		if j == 35 {
			worker = "Worker:Review"
		}
		extra = append(extra, `"validationSchema": "CodeOnly"`, `"max_visits": 3`,
			`"payload_merge_strategy": ["PAYLOAD:LAST", "CONTRACT", "STATIC_MEMORY:rules", "METADATA"]`)
	case j%7 == 3:
		worker = "Command:Echo"
	case j%13 == 6:
		worker = "Internal:UpdateChangePlan"
	}
	fmt.Fprintf(b, "\n        \"Block:%s\": {\n          \"worker\": %q,", id, worker)
	for _, e := range extra {
		fmt.Fprintf(b, "\n          %s,", e)
	}
	b.WriteString("\n          \"transitions\": [")
	tr := func(sig, action, returnTo string) {
		fmt.Fprintf(b, "\n            {\"on_signal\": \"SIGNAL:%s\", \"action\": %q", sig, action)
		if returnTo != "" {
			fmt.Fprintf(b, ", \"return_to\": %q", returnTo)
		}
		b.WriteString("},")
	}
	// Blocks 20 and 30 call the node's children in the call tree.
	child := -1
	if j == 20 {
		child = 2*i + 1
	} else if j == 30 {
		child = 2*i + 2
	}
	switch {
	case child > 0 && child < nodes && !last:
		tr("SUCCESS", fmt.Sprintf("CALL:Node:N%d", child), fmt.Sprintf("Block:N%d_B%d", i, j+1))
	default:
		tr("SUCCESS", next, "")
	}
	if worker == "Worker:Gen" || worker == "Worker:Review" {
		tr("VALIDATION_FAIL", "JUMP:"+id, "")
		tr("NEEDS_CLARIFICATION", "HALT_AND_FLAG", "")
	}
	if j%5 == 4 {
		tr("FAILURE", fmt.Sprintf("FAIL:block %s failed", id), "")
	}
	fmt.Fprintf(b, "\n            {\"on_signal\": \"SIGNAL:FAIL_DEFAULT\", \"action\": \"HALT_AND_FLAG\"}]\n        }")
}

// Workflow returns a YAML step workflow of n steps in all (loop bodies
// included). Steps are mostly commands whose arguments reference
// ${context.x} and ${steps.Prev.output}, chained by goto; every tenth has a
// when condition, every fiftieth is a for_each over ${context.items} with a
// two-step body, every hundredth sets a context key, and a few are mock
// provider steps.
func Workflow(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`version: "1.0"
name: generated
context:
  project: bench
  mode: fast
  items: ["a", "b", "c"]
  limits: {retries: 2}
steps:
`)
	prev := "" // the last command step, for ${steps.Prev.output}
	count := 0 // steps written so far, loop bodies included
	for k := 0; count < n; k++ {
		name := "S" + strconv.Itoa(k)
		nextName := "S" + strconv.Itoa(k+1)
		onOK := "{goto: " + nextName + "}"
		if count+1 >= n || (k%50 == 25 && count+3 >= n) {
			onOK = "{end: true}"
		}
		fmt.Fprintf(&b, "  - name: %s\n", name)
		hasWhen := false
		switch {
		case k%50 == 25 && count+3 <= n:
			fmt.Fprintf(&b, "    for_each:\n      items: \"${context.items}\"\n      as: it\n      steps:\n")
			fmt.Fprintf(&b, "        - name: %s_a\n          command: [\"echo\", \"${it}\", \"${loop.index}\", \"${context.project}\"]\n", name)
			fmt.Fprintf(&b, "          on: {success: {goto: %s_b}, failure: {goto: _loop_break}}\n", name)
			fmt.Fprintf(&b, "        - name: %s_b\n          command: [\"echo\", \"${steps.%s_a.output}\", \"${loop.total}\"]\n", name, name)
			b.WriteString("          on: {success: {goto: _loop_continue}, failure: {goto: _loop_break}}\n")
			count += 3
		case k%100 == 60:
			fmt.Fprintf(&b, "    set_context: {k%d: \"${steps.%s.output}\", stats.last: %s}\n", k, prev, name)
			count++
		case k%100 == 70:
			fmt.Fprintf(&b, "    provider: mock\n    prompt: \"Summarise ${steps.%s.output} for ${context.project}\"\n    timeout: 60\n", prev)
			count++
		default:
			if k > 0 {
				fmt.Fprintf(&b, "    command: [\"echo\", \"${context.project}\", \"${steps.%s.output}\", \"${context.limits.retries}\"]\n", prev)
			} else {
				b.WriteString("    command: [\"echo\", \"${context.project}\", \"${run.id}\"]\n")
			}
			if k%10 == 5 {
				hasWhen = true
				fmt.Fprintf(&b, "    when:\n      all:\n        - step_ok: %s\n        - equals: {left: \"${context.mode}\", right: fast}\n", prev)
				fmt.Fprintf(&b, "        - number: {left: \"${steps.%s.exit_code}\", op: \"<\", right: 1}\n", prev)
			}
			prev = name
			count++
		}
		fmt.Fprintf(&b, "    on:\n      success: %s\n      failure: {error: \"%s failed\"}\n", onOK, name)
		if hasWhen && onOK != "{end: true}" {
			fmt.Fprintf(&b, "      skipped: {goto: %s}\n", nextName)
		}
	}
	return b.Bytes()
}

// TrueChain returns a YAML workflow of n steps that each run `true`,
// chained by goto; the last ends the run.
func TrueChain(n int) []byte {
	var b bytes.Buffer
	b.WriteString("version: \"1.0\"\nname: true-chain\nsteps:\n")
	for i := range n {
		next := fmt.Sprintf("{goto: T%d}", i+1)
		if i == n-1 {
			next = "{end: true}"
		}
		fmt.Fprintf(&b, "  - name: T%d\n    command: [\"true\"]\n    on: {success: %s, failure: {error: \"T%d failed\"}}\n", i, next, i)
	}
	return b.Bytes()
}

// ForEach returns a YAML workflow with one for_each over
// ${context.items} whose body is one `true` command named Body. The items
// come from ContextFile through --context-file.
func ForEach() []byte {
	return []byte(`version: "1.0"
name: flat-loop
steps:
  - name: Loop
    for_each:
      items: "${context.items}"
      as: it
      steps:
        - name: Body
          command: ["true"]
          on: {success: {goto: _loop_continue}, failure: {goto: _loop_break}}
    on: {success: {end: true}, failure: {error: "loop failed"}}
`)
}

// ContextFile returns a JSON object {"items": [...]} of n strings, for
// --context-file.
func ContextFile(n int) []byte {
	items := make([]string, n)
	for i := range items {
		items[i] = "item-" + strconv.Itoa(i)
	}
	data, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		panic("internal error: " + err.Error())
	}
	return data
}
