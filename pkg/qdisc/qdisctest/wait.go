package qdisctest

import (
	"runtime"
	"testing"
	"time"
)

// Quiescer is a qdisc whose dispatchers can say they are asleep.
type Quiescer interface {
	Quiescent() bool
}

// WaitQuiescent yields until q's dispatchers are asleep with nothing they
// can do at the current (fake) time. It fails the test if that takes more
// than a minute of real time, which means a dispatcher is stuck.
func WaitQuiescent(t testing.TB, q Quiescer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for i := 0; !q.Quiescent(); i++ {
		if i%1024 == 0 && time.Now().After(deadline) {
			t.Fatalf("qdisc still busy after a minute")
		}
		runtime.Gosched()
	}
}
