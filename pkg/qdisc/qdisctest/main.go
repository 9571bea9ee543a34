package qdisctest

import (
	"os"
	"testing"

	"gvisor.dev/gvisor/pkg/refs"
)

// Main runs a test binary's tests with gVisor's reference leak checker set
// to panic, and checks for leaks after them: a PacketBuffer reference that
// a test, or the qdisc under test, never released fails the run. Call it
// from TestMain.
func Main(m *testing.M) {
	refs.SetLeakMode(refs.LeaksPanic)
	code := m.Run()
	refs.DoLeakCheck()
	os.Exit(code)
}
