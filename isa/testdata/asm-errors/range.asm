; smith program, isa 5
program "x" format "workflow" source "x.yaml" entry 0009
node 0 "n" entry 3 inherit=false @ x.yaml:1:1
block 0 "b" command node 2 start 0000 dispatch 0007 @ x.yaml:2:1
table 0 block 0 default 0009
  "SIGNAL:SUCCESS" 0004
0000  JUMP  0004  ; nowhere @ x.yaml:3:1
0001  FAIL  0  @ x.yaml:4:1
0002  CALL  1, 0000 @ x.yaml:5:1
