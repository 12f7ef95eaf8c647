package greet

import "testing"

func TestHello(t *testing.T) {
	if got := Hello("Ann"); got != "Hello, Ann!" {
		t.Errorf("Hello(Ann) = %q", got)
	}
}

func TestGoodbye(t *testing.T) {
	if got := Goodbye("Ann"); got != "Goodbye, Ann!" {
		t.Errorf("Goodbye(Ann) = %q", got)
	}
}
