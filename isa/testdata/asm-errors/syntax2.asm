; smith program, isa 5
program "x" format "workflow" source "x.yaml" entry 0000
block 0 "b" command node 0 start "x" dispatch 0000 @ -
