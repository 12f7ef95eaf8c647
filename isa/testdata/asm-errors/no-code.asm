; smith program, isa 4
program "x" format "workflow" source "x.yaml" entry 0000
