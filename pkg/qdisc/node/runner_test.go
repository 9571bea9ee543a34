package node_test

import (
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/node"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// countingClock is a ManualClock that counts the timer callbacks it
// runs.
type countingClock struct {
	*faketime.ManualClock
	fired atomic.Int64
}

// AfterFunc implements tcpip.Clock.AfterFunc, counting each run of f.
func (c *countingClock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	return c.ManualClock.AfterFunc(d, func() { c.fired.Add(1); f() })
}

// TestRunnerParks: an idle class stops its timer after node.ParkAfter
// (no wake-ups while the sandbox is idle) and stops publishing, so the
// others count it idle after node.Stale; its next packet wakes it at
// once, and it steps every Period again.
func TestRunnerParks(t *testing.T) {
	clock := &countingClock{ManualClock: faketime.NewManualClock()}
	board := rootBoard(t, 2)
	now := func() int64 { return int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{})) }
	c := issueClasses[0]
	slot, err := board.Join(c, 1, now(), int64(node.Stale))
	if err != nil {
		t.Fatal(err)
	}
	m, err := node.NewMember(board, slot, 1, c)
	if err != nil {
		t.Fatal(err)
	}
	link := qdisctest.NewLink(clock)
	up := node.NewUplink(link, c.Rate)
	q := fifo.NewWithClock(up, clock, 1, 1000)
	r := node.Run(m, up, clock, now)
	defer func() { r.Close(); q.Close() }()
	send := func() {
		pkt := qdisctest.MakePacket(1500, 0, 1)
		q.WritePacket(pkt)
		pkt.DecRef()
		qdisctest.WaitQuiescent(t, q)
	}
	advance := func(d time.Duration) {
		for range int(d / time.Millisecond) {
			clock.Advance(time.Millisecond)
		}
	}

	send()
	advance(node.ParkAfter / 2)
	if r.Parked() {
		t.Fatalf("parked %v after a packet, before %v idle", node.ParkAfter/2, node.ParkAfter)
	}
	advance(node.ParkAfter)
	if !r.Parked() {
		t.Fatalf("not parked after %v idle", node.ParkAfter*3/2)
	}
	fired := clock.fired.Load()
	advance(time.Second)
	if n := clock.fired.Load() - fired; n != 0 || !r.Parked() {
		t.Errorf("parked and idle for 1 s: %d timer wake-ups (parked %v), want 0", n, r.Parked())
	}
	if got := board.Snapshot(now(), int64(node.Stale)); len(got) != 0 {
		t.Errorf("a class parked for 1 s still counts as live: %+v", got)
	}

	send()
	if r.Parked() {
		t.Fatal("a packet did not wake the parked class")
	}
	if got := board.Snapshot(now(), int64(node.Stale)); len(got) != 1 || got[0].Beat != now() {
		t.Errorf("woken by a packet: the board has %+v, want the class published as of now (%d)", got, now())
	}
	fired = clock.fired.Load()
	advance(5 * node.Period)
	if n := clock.fired.Load() - fired; n != 5 {
		t.Errorf("woken: %d steps in 5 periods, want 5", n)
	}
	if err := r.Err(); err != nil {
		t.Errorf("woken runner: %v", err)
	}
}

// rootBoard returns a board of slots slots whose tree is a 100 Mbit/s
// root class, 1:1.
func rootBoard(t *testing.T, slots int) *node.Board {
	t.Helper()
	board, err := node.Format(alignedMem(node.Size(slots)), slots)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := htb.ParseScript("class root classid 1:1 rate 100mbit")
	if err != nil {
		t.Fatal(err)
	}
	if err := board.SetTree(tree); err != nil {
		t.Fatal(err)
	}
	return board
}

// TestJoinKeepsAParkedSandbox: a slot silent past Stale whose process
// is alive (a parked sandbox) is not reclaimed, and its guarantee stays
// reserved: a newcomer's must fit beside it, or the parked sandbox would
// not get its rate when it wakes. Once no process has its pid, the slot
// and its guarantee are free.
func TestJoinKeepsAParkedSandbox(t *testing.T) {
	stale := int64(node.Stale)
	silentSince := func(pid int) *node.Board {
		board := rootBoard(t, 2)
		// 30 Mbit/s of the root's 100 guaranteed, silent since 1.
		if _, err := board.JoinProcess(issueClasses[2], 1, pid, 1, stale); err != nil {
			t.Fatal(err)
		}
		return board
	}
	newcomer := func(rate uint64) htb.ClassConfig {
		return htb.ClassConfig{ID: 1<<16 | 40, Parent: 1<<16 | 1, Rate: rate * mbit, Ceil: 100 * mbit}
	}
	for _, tc := range []struct {
		name    string
		pid     int
		rate    uint64 // the newcomer's, Mbit/s
		refused string // what the refusal says; "": it joins
	}{
		{"parked: its guarantee is kept", os.Getpid(), 71, "a guarantee of 71Mbit does not fit (70Mbit left)"},
		{"parked: the rest is free", os.Getpid(), 70, ""},
		{"gone: its guarantee is free", deadPid(t), 100, ""},
	} {
		board := silentSince(tc.pid)
		_, err := board.JoinProcess(newcomer(tc.rate), 2, 0, 2+stale, stale)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: a %d Mbit/s guarantee refused: %v", tc.name, tc.rate, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: a %d Mbit/s guarantee: %v, want a refusal saying %q", tc.name, tc.rate, err, tc.refused)
		}
		if live := board.Snapshot(2+stale, stale); err == nil && len(live) != 1 {
			t.Errorf("%s: %d live leaves, want the newcomer alone (a silent class has no share)", tc.name, len(live))
		}
	}
	// A board of one slot: a parked sandbox's slot is not reclaimed.
	board := rootBoard(t, 1)
	if _, err := board.JoinProcess(issueClasses[0], 1, os.Getpid(), 1, stale); err != nil {
		t.Fatal(err)
	}
	if _, err := board.JoinProcess(issueClasses[1], 2, 0, 2+stale, stale); err == nil || !strings.Contains(err.Error(), "slots") {
		t.Errorf("a live process's silent slot: %v, want it kept (every slot taken)", err)
	}
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("no process to reap: %v", err)
	}
	return cmd.Process.Pid
}

// TestDeepBacklogTakesItsShare: a class whose qdisc holds a deep backlog
// (a batch of bookings is seconds of its rate) takes its share as soon
// as the share is computed, not after the packets its qdisc booked at
// its rate, and keeps it with packets as large as host GSO's (one
// booking waits for several steps): alone on the node, it sends its
// ceil within 2% over its first second.
func TestDeepBacklogTakesItsShare(t *testing.T) {
	for _, size := range []int{1500, 65000} {
		clock := faketime.NewManualClock()
		nics := newNode(t, clock, "class root classid 1:1 rate 100mbit", issueClasses[:1], false, func(l stack.LinkEndpoint) qdisc.Discipline {
			return fifo.NewWithClock(l, clock, 1, 1000)
		})
		n := nics[0]
		var before uint64
		for ms := range 1100 {
			if ms == 100 {
				_, before = n.link.Count()
			}
			for n.q.Stats().BacklogPackets < 400 {
				pkt := qdisctest.MakePacket(size, 0, n.seq)
				n.seq++
				n.q.WritePacket(pkt)
				pkt.DecRef()
			}
			qdisctest.WaitQuiescent(t, n.q)
			clock.Advance(time.Millisecond)
		}
		_, sent := n.link.Count()
		sent -= before
		t.Logf("%d-byte packets: %.3f Mbit in the second after its first 100 ms", size, float64(sent)*8/1e6)
		if got, want := float64(sent), float64(100*mbit); got < 0.98*want || got > 1.01*want {
			t.Errorf("alone, backlogged 400 packets of %d bytes deep: %.3f Mbit in the second after its first 100 ms, want its ceil, 100 (within [0.98, 1.01])", size, got*8/1e6)
		}
	}
}
