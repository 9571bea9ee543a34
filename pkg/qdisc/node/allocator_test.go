package node

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// issueTree is the issue's node: a 100 Mbit/s root.
const issueTree = "class root classid 1:1 rate 100mbit"

// fakeProc is a sandbox's process a test kills by hand.
type fakeProc struct{ dead atomic.Bool }

func (p *fakeProc) Alive() bool  { return !p.dead.Load() }
func (p *fakeProc) PID() int     { return 4242 }
func (p *fakeProc) Close() error { return nil }

// sandbox is class 1:minor under 1:1, rates in Mbit/s.
func sandbox(minor uint32, rate, ceil uint64, prio uint8) htb.ClassConfig {
	return htb.ClassConfig{ID: 1<<16 | minor, Parent: 1<<16 | 1, Rate: rate * mbit, Ceil: ceil * mbit, Prio: prio}
}

// testNode is an Allocator of tree with the sandboxes of classes joined
// as of now, each with its Member, its seat and its process.
type testNode struct {
	a     *Allocator
	ms    []*Member
	seats []*Seat
	procs []*fakeProc
}

func newTestNode(t testing.TB, tree string, classes []htb.ClassConfig, now int64) *testNode {
	t.Helper()
	s, err := htb.ParseScript(tree)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAllocator(s, 8)
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{a: a}
	t.Cleanup(func() {
		for _, s := range n.seats {
			s.Close()
		}
		a.Close()
	})
	for _, c := range classes {
		p := &fakeProc{}
		_, c, f, err := a.Join(c, p, now)
		if err != nil {
			t.Fatal(err)
		}
		seat, err := MapSeat(f)
		if err != nil {
			t.Fatal(err)
		}
		n.ms, n.seats, n.procs = append(n.ms, NewMember(seat, c)), append(n.seats, seat), append(n.procs, p)
	}
	return n
}

// run steps the node every Period from *now for d: each member sends
// what its last share let it (busy ones all of it, idle ones nothing,
// dead ones do not publish), then the allocator steps; it returns their
// last shares in Mbit/s.
func (n *testNode) run(t *testing.T, now *int64, d time.Duration, busy, dead []bool, sent []uint64) []float64 {
	t.Helper()
	shares := make([]float64, len(n.ms))
	for end := *now + int64(d); *now < end; *now += int64(Period) {
		for i, m := range n.ms {
			if dead[i] {
				continue
			}
			s, err := m.Share(*now, Counters{Bytes: sent[i], Packets: sent[i] / 1500, Busy: busy[i]})
			if err != nil {
				t.Fatal(err)
			}
			if busy[i] {
				sent[i] += s * uint64(Period) / uint64(time.Second)
			}
			shares[i] = float64(s) / mbit
		}
		n.a.Step(*now)
	}
	return shares
}

// TestAllocatorShares: the issue's three sandboxes, their shares
// computed by the node's allocator from what each publishes: all busy,
// htb's shares (the rates, then the excess by quantum), in all no more
// than the root; one idle gives its share to the others within 100 ms;
// one killed (it stops publishing) within Stale; two prios give the
// excess to the first.
func TestAllocatorShares(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prio       [3]uint8
		busy, dead []bool
		want       []float64
	}{
		{"all busy", [3]uint8{}, []bool{true, true, true}, []bool{false, false, false}, []float64{10 + 40*5.0/21, 20 + 40*8.0/21, 30 + 40*8.0/21}},
		{"1:10 idle", [3]uint8{}, []bool{false, true, true}, []bool{false, false, false}, []float64{10, 45, 55}},
		{"1:30 killed", [3]uint8{}, []bool{true, true, true}, []bool{false, false, true}, []float64{10 + 70*5.0/13, 20 + 70*8.0/13, 0}},
		{"two prios", [3]uint8{0, 1, 1}, []bool{true, true, true}, []bool{false, false, false}, []float64{50, 20, 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t, issueTree, []htb.ClassConfig{sandbox(10, 10, 100, tc.prio[0]), sandbox(20, 20, 100, tc.prio[1]), sandbox(30, 30, 100, tc.prio[2])}, 1e9)
			now := int64(1e9)
			sent := make([]uint64, 3)
			n.run(t, &now, 100*time.Millisecond, []bool{true, true, true}, []bool{false, false, false}, sent)
			got := n.run(t, &now, Stale+200*time.Millisecond, tc.busy, tc.dead, sent)
			var sum float64
			for i := range got {
				if tc.dead[i] {
					continue
				}
				if tc.busy[i] && math.Abs(got[i]-tc.want[i]) > 0.01 {
					t.Errorf("1:%d's share %.3f Mbit/s, want %.3f", []int{10, 20, 30}[i], got[i], tc.want[i])
				}
				if tc.busy[i] {
					sum += got[i]
				}
			}
			if sum > 100.01 {
				t.Errorf("the busy classes' shares sum to %.3f Mbit/s, past the root's 100", sum)
			}
		})
	}
}

// TestAllocatorJoin: admission is the allocator's, from the classes the
// runtime gave: a classid the tree or a seated sandbox holds, a missing
// parent and a guarantee that does not fit are refused, saying what is
// left; a parked sandbox's guarantee is kept; a dead one's is freed the
// moment its process is gone; a full node says so.
func TestAllocatorJoin(t *testing.T) {
	n := newTestNode(t, issueTree+"; class parent 1:1 classid 1:2 rate 20mbit", []htb.ClassConfig{sandbox(0, 30, 100, 0)}, 1)
	for _, tc := range []struct {
		name string
		c    htb.ClassConfig
		want string // "" joins
	}{
		{"the operator's classid", sandbox(2, 1, 100, 0), "is the operator's"},
		{"a seated classid", sandbox(AutoMinor, 1, 100, 0), "taken by a running sandbox"},
		{"a missing parent", htb.ClassConfig{ID: 1<<16 | 9, Parent: 1<<16 | 7, Rate: mbit}, "no class 1:7"},
		{"no rate", sandbox(9, 0, 100, 0), "give a rate"},
		{"ceil below rate", sandbox(9, 10, 5, 0), "below its rate"},
		{"past the parent's rate", sandbox(0, 51, 100, 0), "a guarantee of 51Mbit does not fit (50Mbit left)"},
		{"what is left", sandbox(0, 50, 100, 0), ""},
	} {
		_, got, f, err := n.a.Join(tc.c, &fakeProc{}, 2)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.want)
		case err == nil:
			f.Close()
			if got.ID != 1<<16|AutoMinor+1 {
				t.Errorf("%s: joined as %#x, want 1:8001", tc.name, got.ID)
			}
		}
	}
	// Parked (silent past Stale, alive): its guarantee is kept.
	n.a.Step(2 + int64(Stale) + 1)
	if _, _, _, err := n.a.Join(sandbox(0, 1, 100, 0), &fakeProc{}, 3+int64(Stale)); err == nil || !strings.Contains(err.Error(), "0bit left") {
		t.Errorf("beside a parked sandbox's guarantee: %v, want refused", err)
	}
	// Its process gone: freed at the next step or join.
	n.procs[0].dead.Store(true)
	if _, _, f, err := n.a.Join(sandbox(0, 30, 100, 0), &fakeProc{}, 4+int64(Stale)); err != nil {
		t.Errorf("after the parked sandbox's process is gone: %v", err)
	} else {
		f.Close()
	}
	full := newTestNode(t, "class root classid 1:1 rate 100gbit", nil, 1)
	for i := range 9 {
		_, _, f, err := full.a.Join(sandbox(0, 1, 100, 0), &fakeProc{}, 1)
		if i == 8 {
			if err == nil || !strings.Contains(err.Error(), "every one of the node's 8 slots") {
				t.Errorf("a ninth sandbox on 8 slots: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestMemberKeepsItsClass: whatever its seat says (the sandbox's own
// words, or the allocator's, which it may overwrite), a Member holds its
// share between its class's rate and ceil as the runtime gave them.
func TestMemberKeepsItsClass(t *testing.T) {
	n := newTestNode(t, issueTree, []htb.ClassConfig{sandbox(10, 10, 20, 0)}, 1e9)
	m, w := n.ms[0], n.seats[0].words
	for _, tc := range []struct {
		name  string
		share uint64
		beat  int64
		want  uint64
		err   string
	}{
		{"a share past its ceil", 150 * mbit, 1e9, 20 * mbit, ""},
		{"a share below its rate", 1, 1e9, 10 * mbit, ""},
		{"a beat in the future", math.MaxUint64, math.MaxInt64, 20 * mbit, ""},
		{"no beat for Stale", 15 * mbit, 1e9 - int64(Stale) - 1, 10 * mbit, "has not written"},
	} {
		atomic.StoreUint64(&w[aShare], tc.share)
		atomic.StoreUint64(&w[aBeat], uint64(tc.beat))
		got, err := m.Share(1e9, Counters{Busy: true})
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: share %d, %v; want %d, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestSeatSealed: a seat's descriptor, which a compromised Sentry holds,
// cannot resize it nor add a seal (F_SEAL_WRITE would stop the
// allocator's writes); a hole punched in it reads as zeros, and the
// allocator steps on over it; a descriptor that is not a seat is refused.
func TestSeatSealed(t *testing.T) {
	n := newTestNode(t, issueTree, []htb.ClassConfig{sandbox(10, 10, 100, 0), sandbox(20, 20, 100, 0)}, 1e9)
	fd := int(n.seats[0].f.Fd())
	for _, size := range []int64{0, 8, seatBytes + 4096} {
		if err := unix.Ftruncate(fd, size); err == nil {
			t.Errorf("ftruncate(%d) on a seat: allowed", size)
		}
	}
	if err := unix.Fallocate(fd, 0, 0, 2*seatBytes); err == nil {
		t.Error("fallocate growing a seat: allowed")
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE); err == nil {
		t.Error("F_ADD_SEALS F_SEAL_WRITE on a seat: allowed")
	}
	n.a.Step(1e9)
	if err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, seatBytes); err != nil {
		t.Logf("punching a hole: %v", err)
	}
	now := int64(1e9)
	n.a.Step(now) // the allocator's words again
	got := n.run(t, &now, 100*time.Millisecond, []bool{true, true}, []bool{false, false}, make([]uint64, 2))
	if got[1] < 20 || got[1] > 90 {
		t.Errorf("beside a seat punched to zeros, 1:20's share is %.3f Mbit/s, want within [20, 90]", got[1])
	}
	tmp, err := os.CreateTemp(t.TempDir(), "notaseat")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Truncate(seatBytes)
	if _, err := MapSeat(tmp); err == nil || !strings.Contains(err.Error(), "not a seat") {
		t.Errorf("a plain file as a seat: %v, want it refused", err)
	}
}

// TestAdopt: an allocator started again (the last one was killed) reads
// the state file the last one kept and adopts each sandbox still
// running: a join must fit beside its guarantee, Show marks it, and its
// slot is freed when its process exits. A sandbox that exited meanwhile,
// or whose pid is now another process's, is not adopted.
func TestAdopt(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Skipf("no process to start: %v", err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	gone := exec.Command("true")
	if err := gone.Start(); err != nil {
		t.Skipf("no process to start: %v", err)
	}
	pidfd := func(pid int) Process {
		f, err := OpenPidFD(pid)
		if err != nil {
			t.Skipf("no pidfd: %v", err)
		}
		p, err := NewPidFD(f)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tree, _ := htb.ParseScript(issueTree)
	state := filepath.Join(t.TempDir(), "node.htb.state")
	first, err := NewAllocator(tree, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Persist(state); err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct {
		c   htb.ClassConfig
		pid int
	}{{sandbox(0, 60, 100, 0), child.Process.Pid}, {sandbox(0, 30, 100, 0), gone.Process.Pid}} {
		_, _, f, err := first.Join(j.c, pidfd(j.pid), 1)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	gone.Wait()
	// The first allocator is killed: its state file stays as it was.
	b, _ := os.ReadFile(state)
	first.Close()
	os.WriteFile(state, b, 0o600)

	second, err := NewAllocator(tree, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if n, err := second.Adopt(state, 2); err != nil || n != 1 {
		t.Fatalf("adopted %d, %v; want the one still running", n, err)
	}
	if show := second.Show(3); !strings.Contains(show, "adopted") || !strings.Contains(show, "rate 60Mbit") {
		t.Errorf("the adopted sandbox is not shown as such:\n%s", show)
	}
	if _, _, _, err := second.Join(sandbox(0, 41, 100, 0), &fakeProc{}, 3); err == nil || !strings.Contains(err.Error(), "40Mbit left") {
		t.Errorf("beside an adopted guarantee of 60 of 100: %v, want refused with 40Mbit left", err)
	}
	child.Process.Kill()
	child.Wait()
	second.Step(4)
	if n := second.Held(); n != 0 {
		t.Errorf("the adopted sandbox exited: %d slots held, want 0", n)
	}
	if err := os.WriteFile(state, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Adopt(state, 5); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a corrupt state file: %v, want an error saying what to do", err)
	}
}

// TestEvict: the operator may evict a parked sandbox's class (its
// guarantee then no longer counts for a join), not a live one's; the
// evicted sandbox, if it wakes, holds itself to its rate and says why.
func TestEvict(t *testing.T) {
	n := newTestNode(t, issueTree, []htb.ClassConfig{sandbox(0, 60, 100, 0), sandbox(0, 30, 100, 0)}, 1)
	now := int64(1)
	sent := make([]uint64, 2)
	n.run(t, &now, 100*time.Millisecond, []bool{true, true}, []bool{false, false}, sent)
	for _, tc := range []struct {
		name string
		id   uint32
		want string
	}{
		{"a live class", 1<<16 | AutoMinor, "is live"},
		{"no such class", 1<<16 | 0x77, "no sandbox holds class 1:77"},
	} {
		if err := n.a.Evict(tc.id, now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("evicting %s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// The first parks (stops publishing); the second goes on.
	n.run(t, &now, Stale+100*time.Millisecond, []bool{false, true}, []bool{true, false}, sent)
	if _, _, _, err := n.a.Join(sandbox(0, 20, 100, 0), &fakeProc{}, now); err == nil {
		t.Error("a 20 Mbit/s guarantee beside a parked 60 and a live 30 under 100: joined")
	}
	if err := n.a.Evict(1<<16|AutoMinor, now); err != nil {
		t.Fatalf("evicting the parked class: %v", err)
	}
	if _, _, f, err := n.a.Join(sandbox(0, 20, 100, 0), &fakeProc{}, now); err != nil {
		t.Errorf("a 20 Mbit/s guarantee once the parked 60 was evicted: %v", err)
	} else {
		f.Close()
	}
	share, err := n.ms[0].Share(now, Counters{Busy: true})
	if share != 60*mbit || err == nil || !strings.Contains(err.Error(), "evicted") {
		t.Errorf("the evicted sandbox woke: share %d, %v; want its rate, 60 Mbit/s, and an error saying it was evicted", share, err)
	}
}
