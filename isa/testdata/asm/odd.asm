; smith program, isa 5
program "odd \"name\"; @x" format "workflow" source "dir with space/odd.yaml" entry 0001

string 0 "line1\nline2 \"q\" @ here ; semi"
string 1 "ünï\tcode\x00"
template 0 {"parts":[{"lit":"line1\nline2 \"q\" @ here ; semi"}]}
template 1 {"parts":[{"lit":"ünï\tcode\u0000"}]}

node 0 "n;@\"" entry 0 inherit=false @ a:1:2:1:1
  memory "{ \"spaced\": 1 }"

block 0 "b @ ; \"x\"" command node 0 start 0001 dispatch 0002 @ odd.yaml:3:1
  spec {"step":{"command":[{"parts":[{"lit":"echo"}]},{"parts":[{"lit":"a\nb"}]}]}}

table 0 block 0  ; block "b @ ; \"x\""
  "SIGNAL:SUCCESS" 0003
  "odd signal \"@\";" 0004

data {"config":{}}

0000  JUMP           0001     ; block "b @ ; \"x\""  @ -

node "n;@\"" (entry 0001):
0001  EXEC           0        ; block "b @ ; \"x\""  @ "dir with space/odd.yaml":3:1
0002  DISPATCH       0        ; table 0 (block "b @ ; \"x\"") @ "-":3:1
0003  FAIL           0        ; "line1\nline2 \"q\" @ here ; semi" @ C:\a:b:0:0
0004  FAIL           1        ; "ünï\tcode\x00"      @ "":-1:4
