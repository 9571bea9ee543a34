package lab

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// QDisc runs `runsc qdisc VERB ID ARGS...` on the sandbox (show, or
// change with the flags to change) and returns what it printed: each
// NIC's shaping as `tc -s qdisc show` prints it.
func (s *Sandbox) QDisc(verb string, args ...string) (string, error) {
	c := exec.Command(s.runsc, append([]string{"--root", s.root, "qdisc", verb, s.id}, args...)...)
	out, err := RunBounded(c, 30*time.Second)
	if err != nil {
		return "", fmt.Errorf("runsc qdisc %s %s: %v: %s", verb, strings.Join(args, " "), err, strings.TrimSpace(out))
	}
	return out, nil
}

// Checkpoint saves the sandbox to dir (runsc checkpoint), waits until it
// has stopped, and deletes the stopped container, so that Restore can
// bring it back under the same ID.
func (s *Sandbox) Checkpoint(dir string) error {
	pids := s.Pids()
	c := exec.Command(s.runsc, "--root", s.root, "checkpoint", "--image-path", dir, s.id)
	if out, err := RunBounded(c, time.Minute); err != nil {
		return fmt.Errorf("runsc checkpoint: %v: %s", err, strings.TrimSpace(out))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _, err := s.State()
		if err == nil && status == "stopped" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sandbox did not stop within 30s of its checkpoint (status %q, %v)", status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitGone(pids, 10*time.Second)
	if out, err := exec.Command(s.runsc, "--root", s.root, "delete", s.id).CombinedOutput(); err != nil {
		return fmt.Errorf("runsc delete after checkpoint: %v: %s", err, out)
	}
	return nil
}

// Restore restores the sandbox from dir (runsc restore --detach) with the
// flags it was started with, and waits until it answers ping.
func (s *Sandbox) Restore(dir string) error {
	return s.launch("restore", "--detach", "--image-path", dir, "--bundle", filepath.Join(s.dir, "bundle"), s.id)
}
