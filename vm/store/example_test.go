package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"smith/source"
	"smith/vm/store"
)

// A run persists each step as a delta, snapshots now and then, and is
// loaded back after a crash or on resume.
func Example() {
	base, err := os.MkdirTemp("", "smith-store")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(base)
	s, err := store.New(base)
	if err != nil {
		fmt.Println(err)
		return
	}

	type state struct {
		RunID  string   `json:"run_id"`
		Status string   `json:"status"`
		Done   []string `json:"done"`
	}
	st := state{RunID: "demo", Status: "running"}
	r, err := s.Create("demo")
	if err != nil {
		fmt.Println(err)
		return
	}
	r.WriteSnapshot(st)
	for _, step := range []string{"Prep", "Analyze"} {
		st.Done = append(st.Done, step)
		r.Checkpoint(map[string]string{"done": step}, func() any { return st }, false)
	}
	r.Close()

	r, err = s.Open("demo")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	var got state
	err = r.Load(&got, func(delta []byte) error {
		var d struct{ Done string }
		if err := json.Unmarshal(delta, &d); err != nil {
			return err
		}
		got.Done = append(got.Done, d.Done)
		return nil
	})
	fmt.Println(got.Status, got.Done, err)
	_, err = s.Open("demo") // the lock is held by r
	var coded source.Coded
	if errors.As(err, &coded) {
		fmt.Println(coded.ErrCode(), coded.ErrCode().ExitStatus())
	}
	// Output:
	// running [Prep Analyze] <nil>
	// E_RUN_LOCKED 2
}
