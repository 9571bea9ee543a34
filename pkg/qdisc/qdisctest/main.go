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

// Long reports whether the long runs are asked for: NETQDISC_LONG set to
// anything but "". The random, property, lockstep and model tests then
// run every iteration, simulated second, tree and seed they have (what
// .ci/run's long step runs, without -race); unset, as in the README's
// go test -race ./..., they run fewer of the same checks, with the same
// tolerances, so that the race run stays quick. Each such test's doc
// comment says what its long run adds.
func Long() bool { return os.Getenv("NETQDISC_LONG") != "" }
