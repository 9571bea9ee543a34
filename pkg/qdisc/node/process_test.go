package node

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPidFD: a pidfd holds a sandbox's slot while its process runs, and
// reports it gone once it exited, whether reaped or a zombie nobody
// reaped; a descriptor that is not a pidfd is refused.
func TestPidFD(t *testing.T) {
	open := func(pid int) *PidFD {
		t.Helper()
		f, err := OpenPidFD(pid)
		if err != nil {
			t.Skipf("no pidfd here: %v", err)
		}
		p, err := NewPidFD(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	self := open(os.Getpid())
	if !self.Alive() || self.PID() != os.Getpid() {
		t.Errorf("this process: alive %v pid %d, want alive, %d", self.Alive(), self.PID(), os.Getpid())
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Skipf("no process to start: %v", err)
	}
	p := open(child.Process.Pid)
	if !p.Alive() {
		t.Error("a running child: not alive")
	}
	child.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); p.Alive(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a killed child, not reaped: still alive after 10 s")
		}
	}
	child.Wait()
	if p.Alive() {
		t.Error("a killed and reaped child: alive")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := NewPidFD(r); err == nil || !strings.Contains(err.Error(), "not a pidfd") {
		t.Errorf("a pipe as a pidfd: %v, want it refused", err)
	}
}
