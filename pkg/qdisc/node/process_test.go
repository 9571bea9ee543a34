package node

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestProcessAlive: a board holds a parked sandbox's slot while its
// process runs, and frees it once the process is gone: exited and
// reaped, killed and not yet reaped (a zombie), or its pid now another
// process's (another start time).
func TestProcessAlive(t *testing.T) {
	self := processID(os.Getpid())
	if self>>32 == 0 {
		t.Skip("no start time in /proc/self/stat: not Linux's procfs")
	}
	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Skipf("no process to start: %v", err)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Skipf("no process to start: %v", err)
	}
	t.Cleanup(func() { zombie.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if state, _, ok := procStat(zombie.Process.Pid); ok && state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child did not become a zombie within 10 s")
		}
	}
	for _, tc := range []struct {
		name  string
		id    uint64
		alive bool
	}{
		{"this process", self, true},
		{"this pid, no start time", uint64(os.Getpid()), true},
		{"this pid, another start", self ^ 1<<32, false},
		{"exited and reaped", processID(reaped.Process.Pid), false},
		{"a zombie", uint64(zombie.Process.Pid), false},
		{"none given", 0, false},
		{"a pid past any pid_max", 1<<31 - 1, false},
	} {
		if got := processAlive(tc.id); got != tc.alive {
			t.Errorf("%s (%#x): alive %v, want %v", tc.name, tc.id, got, tc.alive)
		}
	}
}
