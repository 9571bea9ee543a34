package node

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// newMem returns zeroed, 8-byte aligned memory for a board of slots.
func newMem(slots int) []byte {
	w := make([]uint64, Size(slots)/8)
	return unsafeBytes(w)
}

// issueTree is the issue's node: a 100 Mbit/s uplink.
const issueTree = "class root classid 1:1 rate 100mbit"

// newBoard formats a board of slots with tree.
func newBoard(t *testing.T, slots int, tree string) (*Board, []byte) {
	t.Helper()
	mem := newMem(slots)
	b, err := Format(mem, slots)
	if err != nil {
		t.Fatal(err)
	}
	s, err := htb.ParseScript(tree)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetTree(s); err != nil {
		t.Fatal(err)
	}
	return b, mem
}

// sandbox is a sandbox's class under 1:1 of the test trees.
func sandbox(minor uint32, rate, ceil uint64, prio uint8) htb.ClassConfig {
	return htb.ClassConfig{ID: 1<<16 | minor, Parent: 1<<16 | 1, Rate: rate * mbit, Ceil: ceil * mbit, Prio: prio}
}

func TestBoardOpen(t *testing.T) {
	b, mem := newBoard(t, 4, issueTree)
	o, err := Open(mem)
	if err != nil || o.Slots() != 4 {
		t.Fatalf("Open of a formatted board: %v, %d slots", err, o.Slots())
	}
	s, gen, err := o.Tree()
	if err != nil || gen == 0 || len(s.Classes) != 1 || s.Classes[0].Rate != 100*mbit {
		t.Errorf("Tree() = %+v, %d, %v; want the root of 100mbit", s, gen, err)
	}
	s2, _ := htb.ParseScript(issueTree + "; class parent 1:1 classid 1:2 rate 50mbit")
	if err := b.SetTree(s2); err != nil {
		t.Fatal(err)
	}
	if s, gen2, err := o.Tree(); err != nil || gen2 <= gen || len(s.Classes) != 2 {
		t.Errorf("after SetTree: %+v, generation %d (was %d), %v", s, gen2, gen, err)
	}
	for _, tc := range []struct {
		name string
		mem  []byte
		says string
	}{
		{"zeroed", newMem(4), "not a node board"},
		{"short", mem[:100], "needs"},
		{"cut", mem[:Size(2)], "needs"},
		{"misaligned", newMem(4)[1:], "aligned"},
	} {
		if _, err := Open(tc.mem); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Open(%s) = %v, want an error saying %q", tc.name, err, tc.says)
		}
	}
	if _, err := Format(newMem(1), 0); err == nil {
		t.Error("Format of 0 slots taken")
	}
	if _, err := Format(newMem(1), MaxSlots+1); err == nil {
		t.Error("Format past MaxSlots taken")
	}
}

func TestJoin(t *testing.T) {
	const stale = int64(Stale)
	b, _ := newBoard(t, 2, "class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:2 rate 40mbit ceil 100mbit")
	if _, err := b.Join(sandbox(10, 30, 100, 0), 11, 1, stale); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		class htb.ClassConfig
		owner uint64
		says  string
	}{
		{"no owner", sandbox(20, 10, 100, 0), 0, "not be 0"},
		{"no rate", sandbox(20, 0, 100, 0), 12, "give a rate"},
		{"ceil below rate", sandbox(20, 10, 5, 0), 12, "below its rate"},
		{"the operator's classid", sandbox(2, 10, 100, 0), 12, "the operator's"},
		{"no such parent", htb.ClassConfig{ID: 1<<16 | 20, Parent: 1<<16 | 9, Rate: mbit}, 12, "no class 1:9"},
		{"taken classid", sandbox(10, 10, 100, 0), 12, "taken by a running sandbox"},
		{"guarantee past the root", sandbox(20, 31, 100, 0), 12, "does not fit"},
	} {
		if _, err := b.Join(tc.class, tc.owner, 2, stale); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Join(%s) = %v, want an error saying %q", tc.name, err, tc.says)
		}
	}
	slot, err := b.Join(sandbox(20, 30, 100, 0), 12, 3, stale)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(sandbox(30, 1, 100, 0), 13, 4, stale); err == nil || !strings.Contains(err.Error(), "does not fit") && !strings.Contains(err.Error(), "slots") {
		t.Errorf("a third join on a full node: %v", err)
	}
	if b.Publish(slot, 99, 5, Published{}) || b.Leave(slot, 99) {
		t.Error("Publish or Leave by another owner taken")
	}
	if !b.Leave(slot, 12) {
		t.Fatal("Leave by the owner refused")
	}
	if got := len(b.Snapshot(6, stale)); got != 1 {
		t.Errorf("after a leave, %d live leaves, want 1", got)
	}
	// The first sandbox stops publishing (killed): past Stale its slot
	// and its guarantee are free for another.
	if _, err := b.Join(sandbox(30, 60, 100, 0), 14, 1+stale, stale); err == nil {
		t.Error("a guarantee taken while the first sandbox is live")
	}
	if _, err := b.Join(sandbox(30, 60, 100, 0), 14, 2+stale, stale); err != nil {
		t.Errorf("after the first sandbox went silent for %v: %v", Stale, err)
	}
}

// TestBoardConcurrent: sandboxes publishing while others read and the
// runtime rewrites the tree, under the race detector.
func TestBoardConcurrent(t *testing.T) {
	b, _ := newBoard(t, 8, issueTree)
	var slots [4]int
	for i := range slots {
		var err error
		if slots[i], err = b.Join(sandbox(uint32(10+i), 10, 100, 0), uint64(i+1), 1, int64(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i, slot := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range uint64(2000) {
				b.Publish(slot, uint64(i+1), int64(n), Published{Bytes: n})
				if l := b.Snapshot(int64(n), int64(time.Hour)); len(l) != 4 {
					t.Errorf("%d live leaves, want 4", len(l))
					return
				}
			}
		}()
	}
	s, _ := htb.ParseScript(issueTree)
	for range 200 {
		if err := b.SetTree(s); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Tree(); err != nil && !strings.Contains(err.Error(), "being written") {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
