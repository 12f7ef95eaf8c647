; smith program, isa 5
program "x" format "workflow" source "x.yaml" entry 0000
0000  JUMPP  0000  @ -
0001  INVALID  @ -
