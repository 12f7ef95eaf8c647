// Command hello is the start-up floor of target 9 of bench/run.sh: a Go
// hello-world built the same way as smithvm (go build, default flags).
package main

import "fmt"

func main() { fmt.Println("hello, world") }
