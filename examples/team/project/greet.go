// Package greet says hello and goodbye. The team example's engineers add
// Hello (hello.go) and Goodbye (goodbye.go).
package greet
