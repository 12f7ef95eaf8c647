; smith program, isa 5
program "x" format "workflow" source "x.yaml" entry 0000
string 1 "a"
0000  END  @ -
0002  END  @ -
