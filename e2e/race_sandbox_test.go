package e2e

import "testing"

// skipSandboxUnderRace skips, in a -race build, a test whose shaping runs
// in a real runsc sandbox (started by the test, or by containerd or
// Docker): runsc is built without -race, so the race run would measure
// the same sandbox a second time, and .ci/run runs every such test in its
// run without -race. The tests whose netstacks and qdiscs run in this
// binary keep -race.
func skipSandboxUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("the sandbox is runsc's own binary, built without -race: measured in the run without -race (.ci/run runs go test ./e2e/ too)")
	}
}
