package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// helperEnv names the board file a helper process joins as a busy
// sandbox of 30 Mbit/s (TestKilledSandbox).
const helperEnv = "NETQDISC_NODE_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(busySandbox(path))
	}
	os.Exit(m.Run())
}

// busySandbox joins the board at path as class 1:30 (30 Mbit/s, ceil
// 100) and publishes as a backlogged class every Period until killed.
func busySandbox(path string) int {
	bf, err := OpenFile(path, 8)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := sandbox(30, 30, 100, 0)
	bf.Lock()
	slot, err := bf.Join(c, 30, Now(), int64(Stale))
	bf.Unlock()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m, err := NewMember(bf.Board, slot, 30, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("joined")
	for {
		if _, err := m.Share(Now(), Counters{Busy: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(Period)
	}
}

// TestKilledSandbox: a sandbox in another process, busy on the board
// file, is killed with SIGKILL in mid-flight: within a second its
// guarantee and its share go to the sandbox left, and its slot is free
// for another.
func TestKilledSandbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.board")
	bf, err := OpenFile(path, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	tree, _ := htb.ParseScript(issueTree)
	if err := bf.SetTree(tree); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 16)
	if n, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "joined") {
		t.Fatalf("the helper did not join: %q, %v", buf[:n], err)
	}
	c := sandbox(20, 20, 100, 0)
	bf.Lock()
	slot, err := bf.Join(c, 20, Now(), int64(Stale))
	bf.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMember(bf.Board, slot, 20, c)
	if err != nil {
		t.Fatal(err)
	}
	share := func() uint64 {
		s, err := m.Share(Now(), Counters{Busy: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Both busy: 50 Mbit/s of excess, by quanta of 200000 bytes each.
	deadline := time.Now().Add(2 * time.Second)
	for share() != 45*mbit {
		if time.Now().After(deadline) {
			t.Fatalf("beside the busy helper the share is %d bytes/s, want %d", share(), 45*mbit)
		}
		time.Sleep(Period)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	cmd.Wait()
	for share() != 100*mbit {
		if time.Since(killed) > time.Second {
			t.Fatalf("%v after SIGKILL the share is %d bytes/s, want the whole root's %d", time.Since(killed), share(), 100*mbit)
		}
		time.Sleep(Period)
	}
	t.Logf("the killed sandbox's share came back in %v", time.Since(killed).Round(time.Millisecond))
	bf.Lock()
	_, err = bf.Join(sandbox(30, 80, 100, 0), 31, Now(), int64(Stale))
	bf.Unlock()
	if err != nil {
		t.Errorf("after the kill, a sandbox of 80 Mbit/s beside the one of 20: %v", err)
	}
}
