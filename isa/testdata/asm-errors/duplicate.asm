; smith program, isa 5
program "x" format "workflow" source "x.yaml" entry 0000
program "y" format "workflow" source "x.yaml" entry 0000
data {}
data {}
0000  END 99999999999 @ -
