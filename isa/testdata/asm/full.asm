; smith program, isa 5
program "full" format "manifest" source "flow.json" entry 0000

string 0 "prep failed: see 'log'"
template 0 {"parts":[{"lit":"prep failed in "},{"ref":{"path":[{"key":"context"},{"key":"dir"}],"raw":"context.dir","pos":{"file":"flow.json","line":14,"col":20}}},{"lit":": costs $5, see ${{log}} and ${{open"}]}

node 0 "Main" entry 0 inherit=false @ flow.json:2:5
node 1 "Sub" entry 5 inherit=true @ flow.json:45:5
  memory {"k":1,"l":[true,null]}

block 0 "Prep" command node 0 start 0000 dispatch 0003 @ flow.json:10:3
  spec {"max_visits":3,"when":{"op":9,"sub":[{"op":1,"name":"Init","pos":{"file":"flow.json","line":11,"col":3}},{"op":11,"sub":[{"op":2,"x":{"parts":[{"lit":"stop.flag"}]},"pos":{"file":"flow.json","line":11,"col":3}}],"pos":{"file":"flow.json","line":11,"col":3}},{"op":10,"sub":[{"op":3,"x":{"parts":[{"lit":"dir-"},{"ref":{"path":[{"key":"context"},{"key":"dir"}],"raw":"context.dir","pos":{"file":"flow.json","line":4,"col":12}}}]},"y":{"parts":[{"lit":"dir-x"}]},"pos":{"file":"flow.json","line":11,"col":3}},{"op":4,"name":"Init","cmp":"<=","num":2,"pos":{"file":"flow.json","line":11,"col":3}},{"op":5,"name":"CI","pos":{"file":"flow.json","line":11,"col":3}},{"op":6,"x":{"parts":[{"lit":"abc"}]},"y":{"parts":[{"lit":"b"}]},"pos":{"file":"flow.json","line":11,"col":3}},{"op":7,"x":{"parts":[{"lit":"v1.2"}]},"y":{"parts":[{"lit":"^v\\d+"}]},"flags":"i","pos":{"file":"flow.json","line":11,"col":3}},{"op":8,"x":{"parts":[{"lit":"3.5"}]},"y":{"parts":[{"lit":"2"}]},"cmp":">","pos":{"file":"flow.json","line":11,"col":3}}],"pos":{"file":"flow.json","line":11,"col":3}}],"pos":{"file":"flow.json","line":11,"col":3}},"step":{"command":[{"parts":[{"lit":"go"}]},{"parts":[{"lit":"test"}]},{"parts":[{"lit":"dir-"},{"ref":{"path":[{"key":"context"},{"key":"dir"}],"raw":"context.dir","pos":{"file":"flow.json","line":4,"col":12}}}]}],"input_file":{"parts":[{"lit":"in.txt"}]},"output_file":{"parts":[{"lit":"dir-"},{"ref":{"path":[{"key":"context"},{"key":"dir"}],"raw":"context.dir","pos":{"file":"flow.json","line":4,"col":12}}}]},"output_capture":"json","allow_parse_error":true,"timeout":12.5,"attempts":3,"has_backoff":true,"env":[{"name":"DIR","val":{"parts":[{"lit":"dir-"},{"ref":{"path":[{"key":"context"},{"key":"dir"}],"raw":"context.dir","pos":{"file":"flow.json","line":4,"col":12}}}]}},{"name":"EMPTY","val":{}}],"secrets":["TOKEN"],"has_secrets":true,"wait_for":{"glob":{"parts":[{"lit":"out/*.txt"}]},"timeout_sec":2,"poll_ms":50,"min_count":2},"depends_on":{"required":[{"parts":[{"lit":"a.txt"}]}],"optional":[{"parts":[{"lit":"dir-"},{"ref":{"path":[{"key":"context"},{"key":"dir"}],"raw":"context.dir","pos":{"file":"flow.json","line":4,"col":12}}}]}],"inject":"content","instruction":"read these","position":"append"},"allow_missing_vars":["context.dir"],"payload_merge_strategy":["deep"]}}
block 1 "Set" set_context node 0 start 0007 dispatch 0008 @ flow.json:20:3
  spec {"set_context":[{"key":"a.b","val":{"kind":3,"str":{"parts":[{"lit":"dir-"},{"ref":{"path":[{"key":"context"},{"key":"dir"}],"raw":"context.dir","pos":{"file":"flow.json","line":4,"col":12}}}]}}},{"key":"n","val":{"kind":2,"num":"1e3","str":{}}},{"key":"m","val":{"kind":5,"str":{},"map":[{"key":"t","val":{"kind":1,"bool":true,"str":{}}},{"key":"z","val":{"kind":0,"str":{}}},{"key":"l","val":{"kind":4,"str":{},"list":[{"kind":2,"num":"-2.5","str":{}},{"kind":3,"str":{"parts":[{"lit":"s"}]}}]}}]}}]}
block 2 "Each" loop node 0 start 0010 dispatch 0017 @ flow.json:30:3
  spec {"loop":{"items":{"kind":3,"str":{"parts":[{"ref":{"path":[{"key":"context"},{"key":"files"},{"index":2,"is_index":true}],"raw":"context.files[2]","pos":{"file":"flow.json","line":30,"col":14}}}]}},"as":"file","body":11,"steps":[3]}}
block 3 "Body" provider node 0 start 0011 dispatch 0012 @ flow.json:32:3
  spec {"parent":3,"agent":"coder","step":{"providers":["claude","mock"],"prompt":{"parts":[{"ref":{"path":[{"key":"context"},{"key":"files"},{"index":2,"is_index":true}],"raw":"context.files[2]","pos":{"file":"flow.json","line":30,"col":14}}}]},"prompt_file":{"parts":[{"lit":"prompt.md"}]},"provider_params":[{"key":"model","val":{"kind":3,"str":{"parts":[{"lit":"opus"}]}}}],"command_override":[{"parts":[{"lit":"claude"}]},{"parts":[{"lit":"-p"}]}],"prompt_transport":{"mode":"argv","argv_template":[{"parts":[{"lit":"--prompt"}]},{"parts":[{"lit":"${PROMPT}"}]}]},"validation_schema":"Answer","output_type":"json"}}
block 4 "Review" internal node 0 start 0020 dispatch 0021 @ flow.json:40:3
  spec {"step":{"worker":"Internal:Echo"}}
block 5 "SubStart" provider node 1 start 0023 dispatch 0024 @ flow.json:50:3
  spec {"step":{"worker":"writer","ai":{"key":"writer","instructions":"write it","output_type":"text","provider_params":[{"key":"temperature","val":{"kind":2,"num":"0.2","str":{}}}]}}}

table 0 block 0 default 0006  ; block "Prep"
  "SIGNAL:SUCCESS" 0004
  "SIGNAL:CALL" 0005
table 1 block 1  ; block "Set"
  "SIGNAL:SUCCESS" 0009
table 2 block 3 default 0015  ; block "Body"
  "SIGNAL:SUCCESS" 0013
  "SIGNAL:BREAK" 0014
  "SIGNAL:FAILURE" 0015
table 3 block 2 default 0019  ; block "Each"
  "SIGNAL:SUCCESS" 0018
  "SIGNAL:FAILURE" 0019
table 4 block 4  ; block "Review"
  "SIGNAL:SUCCESS" 0022
table 5 block 5 default 0025  ; block "SubStart"

data {"strict_flow":true,"context":{"kind":5,"str":{},"map":[{"key":"dir","val":{"kind":3,"str":{"parts":[{"lit":"src"}]}}},{"key":"files","val":{"kind":4,"str":{},"list":[{"kind":3,"str":{"parts":[{"lit":"a"}]}}]}}]},"secrets":["TOKEN"],"env_allow":["HOME","PATH"],"providers":[{"name":"claude","command":["claude","-p","${PROMPT}","--model","${model}"],"defaults":[{"key":"model","val":{"kind":3,"str":{"parts":[{"lit":"sonnet"}]}}}],"prompt_transport":{"mode":"stdin"}},{"name":"mock","command":["mock"]}],"agents":[{"name":"coder","providers":["claude"],"inbox":"inbox/coder"}],"schemas":[{"name":"Answer","schema":"{\"type\":\"object\"}"}],"config":{"test_command":["go","test","./..."],"lint_command":["go","vet"],"build_command":["go","build"],"isolation":"worktree"}}

node "Main" (entry 0000):
0000  VISIT          0, 0003  ; block "Prep", dispatch of "Prep" @ flow.json:10:3
0001  WHEN           0, 0003  ; block "Prep", dispatch of "Prep" @ flow.json:10:3
0002  EXEC           0        ; block "Prep"         @ flow.json:10:3
0003  DISPATCH       0        ; table 0 (block "Prep") @ flow.json:10:3
0004  JUMP           0007     ; block "Set"          @ flow.json:12:3
0005  CALL           1, 0007  ; node "Sub", block "Set" @ flow.json:13:3
0006  FAIL           0        ; "prep failed in ${context.dir}: costs $$5, see ${{log}} and $${{open" @ flow.json:14:3
0007  SET_CONTEXT    1        ; block "Set"          @ flow.json:20:3
0008  DISPATCH       1        ; table 1 (block "Set") @ flow.json:20:3
0009  JUMP           0010     ; block "Each"         @ flow.json:21:3
0010  LOOP_BEGIN     2, 0017  ; block "Each", dispatch of "Each" @ flow.json:30:3
0011  EXEC           3        ; block "Body"         @ flow.json:32:3
0012  DISPATCH       2        ; table 2 (block "Body") @ flow.json:32:3
0013  JUMP           0016     ;                      @ flow.json:33:3
0014  LOOP_BREAK     2, 0017  ; block "Each", dispatch of "Each" @ flow.json:34:3
0015  LOOP_FAIL      2, 0017  ; block "Each", dispatch of "Each" @ flow.json:35:3
0016  LOOP_NEXT      2, 0011  ; block "Each", block "Body" @ flow.json:30:3
0017  DISPATCH       3        ; table 3 (block "Each") @ flow.json:30:3
0018  HALT_AND_FLAG  4        ; block "Review"       @ flow.json:36:3
0019  END                     ;                      @ flow.json:37:3
0020  EXEC           4        ; block "Review"       @ flow.json:40:3
0021  DISPATCH       4        ; table 4 (block "Review") @ flow.json:40:3
0022  RETURN                  ;                      @ flow.json:41:3

node "Sub" (entry 0023):
0023  EXEC           5        ; block "SubStart"     @ flow.json:50:3
0024  DISPATCH       5        ; table 5 (block "SubStart") @ flow.json:50:3
0025  RETURN                  ;                      @ -
