; smith program, isa 5
program "x" format "workflow" source "x.yaml" entry 0000
node 0 "n" entry 0 inherit=false @ -
block 0 "b" comand node 0 start 0000 dispatch 0000 @ -
0000  END  @ -
