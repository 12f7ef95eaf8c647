; smith program, isa 5
program "x" format "workflow" source "x.yaml" entry 0000
block 0 "b" command node 0 start 0000 dispatch 0000 @ -
  spec {"step":{"comand":[]}}
block 1 "c" command node 0 start 0000 dispatch 0000 @ -
  spec {"max_visits":"3"}
block 2 "d" command node 0 start 0000 dispatch 0000 @ -
  spec {"max_visits":3,}
