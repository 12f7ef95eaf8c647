; smith program, isa 5
program "x" format "workflow" source "x.yaml" entry 0000
  spec {}
  memory {}
  "SIGNAL:SUCCESS" 0000
0000  END  @ -
