; smith program, isa 5
; A hand-written listing: spacing, comments and group headers are free;
; Assemble reads only the statements.
program "demo"   format "workflow" source "demo.yaml" entry 0

; the FAIL message, a template without references
template 0 {"parts": [{"lit": "Prep failed"}]}
node 0 "demo" entry 0 inherit=false @ demo.yaml:2:7

block 0 "Prep" command node 0 start 0 dispatch 1 @ demo.yaml:10:5
  spec {"step":{"command":[{"parts":[{"lit":"make"}]},{"parts":[{"lit":"prep"}]}]}}
block 1 "Report" command node 0 start 5 dispatch 6 @ demo.yaml:20:5
  spec {"step": {"command": [{"parts": [{"lit": "echo"}]}, {"parts": [{"lit": "done"}]}]}}
block 2 "Review" command node 0 start 8 dispatch 9 @ demo.yaml:30:5
  spec {"step":{"command":[{"parts":[{"lit":"true"}]}]}}

table 0 block 0 default 4
  "SIGNAL:SUCCESS" 2
  "SIGNAL:FAILURE" 3
table 1 block 1
  "SIGNAL:SUCCESS" 7
table 2 block 2 default 10

data {"strict_flow":true}

0 EXEC 0 @ demo.yaml:10:5
1 DISPATCH 0 @ demo.yaml:10:5
2 JUMP 5 ; to Report @ demo.yaml:14:11
3 FAIL 0 @ demo.yaml:15:20
4 HALT_AND_FLAG 2 @ flow.json:19:7
5 EXEC 1 @ demo.yaml:20:5
6 DISPATCH 1 @ demo.yaml:20:5
7 END @ demo.yaml:21:11
8 EXEC 2 @ demo.yaml:30:5
9 DISPATCH 2 @ demo.yaml:30:5
10 END @ demo.yaml:31:11
