; smith program, isa 3
program "x" format "workflow" source "x.yaml" entry 0000
