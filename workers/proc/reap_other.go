//go:build !linux

package proc

import (
	"syscall"
)

func becomeSubreaper()   {}
func addLeader(int)      {}
func dropLeader(int)     {}
func waitExit(int, int)  {}
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
func startStep(start func() (int, error)) error {
	_, err := start()
	return err
}
func reapOrphans()                                        {}
func dieWithParent(*syscall.SysProcAttr)                  {}
func askPidfd(*syscall.SysProcAttr, *int)                 {}
func retryWithoutPidfd(*syscall.SysProcAttr, error) bool  { return false }
func givePidfdsUp()                                       {}
func recordGroup(string, int, uint64) (*groupSlot, error) { return nil, nil }
func bootTicks() uint64                                   { return 0 }
func forgetGroup(*groupSlot)                              {}

type groupSlot struct{}

func settleGroup(int) bool { return true }

// KillLeftovers does nothing where /proc is missing.
func KillLeftovers(string) int { return 0 }
