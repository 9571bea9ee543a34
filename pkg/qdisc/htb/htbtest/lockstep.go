package htbtest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// Lockstep drives an htb.Tree and the Linux model with the same arrivals
// and changes, at the same times from a faketime.ManualClock: at an
// arrival it enqueues into both and dequeues both until each is
// empty-handed; between arrivals it steps to the earlier of the model's
// watchdog and the tree's NextEvent and dequeues both there. It compares
// every departure (packet, class, size, time) as it goes.
type Lockstep struct {
	Clock *faketime.ManualClock
	Tree  *htb.Tree
	Model *Model
	// Start is the clock's time (ns) when the tree was made; arrivals and
	// changes are offsets from it.
	Start int64
	// Sent are the tree's departures, in order, times absolute.
	Sent []Departure
	// OnlyTree and OnlyLinux count the timer steps that only the tree's
	// NextEvent, or only the model's watchdog, asked for: calls one side
	// would not have had.
	OnlyTree, OnlyLinux int
	// Poll, if not 0, makes the run hold the tree to Linux under more
	// dequeues than Linux makes, as a lane woken for other reasons does:
	// the tree is dequeued also every Poll ns while it holds packets (at
	// most MaxPolls times), and the model only when its own watchdog
	// fires, exactly as Linux calls htb_dequeue.
	Poll     int64
	MaxPolls int
	polls    int
	nextPoll int64
	// Batch makes the packets that arrive at one time all enqueued before
	// both sides are dequeued, as when Linux's qdisc is already running
	// on another CPU (or the device is busy): the direct queue and the
	// leaves then hold bursts.
	Batch bool
	// OneByOne makes each packet that arrives followed by one dequeue of
	// each side, and the packets of one time by a drain: packets are
	// queued between dequeues at one time, as when a lane's pass took a
	// batch and its next pass reads the same time.
	OneByOne bool
	// PeekFirst makes every Dequeue of the tree follow two Peeks at the
	// same time (qdisc_peek_dequeued): they must name the packet the
	// Dequeue hands over, or none when it hands over none.
	PeekFirst bool
	// BatchDequeue, if not 0, makes the tree dequeued by DequeueBatch, as
	// a lane takes its packets: a drain in calls of BatchDequeue packets
	// until one comes back short, a single dequeue a call of one.
	BatchDequeue int
	// Trace, if not nil, is given every step as the failure report would
	// show it.
	Trace func(string)

	// named maps a packet's sequence number to the class it names.
	named map[uint64]uint32
	// pkts holds the test's own reference to every packet made.
	pkts []*stack.PacketBuffer
	// treeNext is the tree's NextEvent after its last empty-handed
	// Dequeue while packets waited, -1 when it waits for nothing.
	treeNext int64
	// checked counts the departures compared so far.
	checked int
	// history is the last steps, for a divergence's report.
	history []string
}

// classifier gives the tree each packet's class as the arrival names it.
type classifier struct{ named map[uint64]uint32 }

// Classify implements htb.Classifier.
func (c classifier) Classify(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32 {
	return c.named[qdisctest.Seq(pkt)]
}

// NowNS reads c in nanoseconds.
func NowNS(c tcpip.Clock) int64 { return int64(c.NowMonotonic().Sub(tcpip.MonotonicTime{})) }

// NewLockstep makes the tree and the model of cfg, both full at the clock's
// time.
func NewLockstep(t testing.TB, cfg htb.Config) *Lockstep {
	t.Helper()
	ls := &Lockstep{Clock: faketime.NewManualClock(), named: make(map[uint64]uint32), treeNext: -1, nextPoll: -1}
	// Start away from 0 so that nothing relies on it.
	ls.Clock.Advance(1000 * time.Second)
	ls.Start = NowNS(ls.Clock)
	m, err := NewModel(cfg, ls.Start)
	if err != nil {
		t.Fatalf("NewModel: %v", err)
	}
	tree, err := htb.NewTree(cfg, classifier{ls.named}, ls.Start)
	if err != nil {
		t.Fatalf("htb.NewTree: %v", err)
	}
	ls.Model, ls.Tree = m, tree
	// After a failure, give back what the tree holds and the test's own
	// references, so that the leak check reports only real leaks.
	t.Cleanup(func() {
		if ls.pkts == nil {
			return
		}
		ls.Tree.Purge()
		for _, pkt := range ls.pkts {
			if pkt.ReadRefs() > 0 {
				pkt.DecRef()
			}
		}
	})
	return ls
}

// Run runs arrivals and changes (offsets from Start, in time order) until
// both sides are idle.
func (ls *Lockstep) Run(t testing.TB, arrivals []Arrival, changes []Change) {
	t.Helper()
	m := ls.Model
	i, c := 0, 0
	for step := 0; ; step++ {
		if step > maxSteps {
			t.Fatalf("no end after %d steps", step)
		}
		timers := []int64{m.Watchdog, ls.treeNext, ls.nextPoll}
		for k, at := range timers {
			if at >= 0 {
				timers[k] = at - ls.Start
			}
		}
		rel := nextTime(arrivals, i, changes, c, timers...)
		if rel == math.MaxInt64 {
			return
		}
		now := ls.Start + rel
		if now < NowNS(ls.Clock) {
			t.Fatalf("arrival or change at %dns is before %dns: not in time order", rel, NowNS(ls.Clock)-ls.Start)
		}
		ls.Clock.Advance(time.Duration(now - NowNS(ls.Clock)))
		if mDue, tDue, pDue := m.Watchdog == now, ls.treeNext == now, ls.nextPoll == now; mDue || tDue || pDue {
			ls.note(now, fmt.Sprintf("timer (Linux's due: %v, tree's due: %v, poll: %v; Linux's watchdog %s, tree's NextEvent %s)", mDue, tDue, pDue, ls.rel(m.Watchdog), ls.rel(ls.treeNext)))
			if tDue && !mDue {
				ls.OnlyTree++
			}
			if mDue && !tDue {
				ls.OnlyLinux++
			}
			nm, nt := len(m.Sent), len(ls.Sent)
			if mDue || ls.Poll == 0 {
				m.Dequeue(now)
			}
			ls.drainTree(t, now)
			if len(m.Sent) > nm && !mDue {
				ls.fail(t, now, fmt.Sprintf("the model sent packet %d only because the tree's NextEvent called it; its own watchdog was %s: a model bug", m.Sent[nm].Seq, ls.rel(m.Watchdog)))
			}
			if len(ls.Sent) > nt && !tDue && !pDue {
				ls.fail(t, now, fmt.Sprintf("the tree sent packet %d only because Linux's watchdog called it; its NextEvent was %s: it would have slept past Linux's departure", ls.Sent[nt].Seq, ls.rel(ls.treeNext)))
			}
			ls.compare(t, now)
		}
		for ; c < len(changes) && ls.Start+changes[c].At == now; c++ {
			if changes[c].Purge {
				ls.purge(t, now)
				continue
			}
			cc := changes[c].Class
			ls.note(now, fmt.Sprintf("change %+v", cc))
			merr := m.Change(cc, now)
			terr := ls.Tree.ChangeClass(cc, now)
			if (merr == nil) != (terr == nil) {
				ls.fail(t, now, fmt.Sprintf("ChangeClass(%#x): tree says %v, model says %v", cc.ID, terr, merr))
			}
			m.Dequeue(now)
			ls.drainTree(t, now)
			ls.compare(t, now)
		}
		for ; i < len(arrivals) && ls.Start+arrivals[i].At == now; i++ {
			ls.arrive(t, now, arrivals[i])
			if (ls.Batch || ls.OneByOne) && (i+1 == len(arrivals) || arrivals[i+1].At != arrivals[i].At) {
				ls.drain(t, now)
			}
		}
		ls.schedulePoll(now)
	}
}

// schedulePoll arms the next poll of the tree, if polling, while it holds
// packets.
func (ls *Lockstep) schedulePoll(now int64) {
	if ls.Poll == 0 || (ls.nextPoll > now) {
		return
	}
	ls.nextPoll = -1
	if n, _ := ls.Tree.Len(); n > 0 && ls.polls < ls.MaxPolls {
		ls.nextPoll = now + ls.Poll
		ls.polls++
	}
}

// purge purges both sides (htb_reset); Linux dequeues nothing after it.
func (ls *Lockstep) purge(t testing.TB, now int64) {
	t.Helper()
	ls.note(now, "purge")
	mn, mb := ls.Model.Purge()
	tn, tb := ls.Tree.Purge()
	if mn != tn || mb != tb {
		ls.fail(t, now, fmt.Sprintf("Purge: tree dropped %d packets %d bytes; Linux %d packets %d bytes", tn, tb, mn, mb))
	}
	ls.treeNext = -1
	ls.compare(t, now)
}

// arrive enqueues one packet into both sides and, unless batching,
// dequeues both.
func (ls *Lockstep) arrive(t testing.TB, now int64, a Arrival) {
	t.Helper()
	seq := uint64(len(ls.pkts))
	ls.named[seq] = a.Class
	pkt := qdisctest.MakePacket(int(a.Size), 0, seq)
	ls.pkts = append(ls.pkts, pkt)
	pkt.IncRef() // the tree's
	queued := ls.Tree.Enqueue(pkt, a.Size, now)
	if !queued {
		pkt.DecRef()
	}
	ok := ls.Model.Enqueue(now, seq, a.Class, a.Size)
	ls.note(now, fmt.Sprintf("packet %d (%d bytes) for %#x: Linux queued=%v, tree queued=%v", seq, a.Size, a.Class, ok, queued))
	if ok != queued {
		ls.fail(t, now, fmt.Sprintf("packet %d (%d bytes) for class %#x: tree queued=%v, Linux queued=%v", seq, a.Size, a.Class, queued, ok))
	}
	switch {
	case ls.OneByOne:
		ls.dequeueOne(t, now)
	case !ls.Batch:
		ls.drain(t, now)
	}
}

// dequeueOne dequeues each side once at now and compares their
// departures.
func (ls *Lockstep) dequeueOne(t testing.TB, now int64) {
	t.Helper()
	ls.Model.DequeueOne(now)
	if ls.BatchDequeue != 0 {
		ls.dequeueBatch(t, now, 1)
	} else if pkt, size, ok := ls.Tree.Dequeue(now); ok {
		ls.record(t, now, pkt, size)
	}
	ls.compare(t, now)
}

// dequeueBatch dequeues up to n packets from the tree at now in one
// DequeueBatch call, records them, and returns how many it handed over.
func (ls *Lockstep) dequeueBatch(t testing.TB, now int64, n int) int {
	t.Helper()
	var pkts stack.PacketBufferList
	sizes := make([]uint32, n)
	got := ls.Tree.DequeueBatch(now, &pkts, sizes)
	if got != pkts.Len() || got > n {
		ls.fail(t, now, fmt.Sprintf("DequeueBatch of %d returned %d and handed over %d packets", n, got, pkts.Len()))
	}
	for i, pkt := range pkts.AsSlice() {
		ls.record(t, now, pkt, sizes[i]) // the list's reference is the tree's
	}
	return got
}

// drain dequeues both sides at now and compares their departures.
func (ls *Lockstep) drain(t testing.TB, now int64) {
	t.Helper()
	ls.Model.Dequeue(now)
	ls.drainTree(t, now)
	ls.compare(t, now)
}

// drainTree dequeues the tree at now until it hands over nothing (by
// Dequeue, or DequeueBatch), and reads its NextEvent if packets wait.
func (ls *Lockstep) drainTree(t testing.TB, now int64) {
	t.Helper()
	for full := ls.BatchDequeue != 0; full; { // batches until one comes back short
		full = ls.dequeueBatch(t, now, ls.BatchDequeue) == ls.BatchDequeue
	}
	for ls.BatchDequeue == 0 {
		peeked, psize := ls.peek(t, now)
		pkt, size, ok := ls.Tree.Dequeue(now)
		if ls.PeekFirst && (peeked != ok || size != psize) {
			ls.fail(t, now, fmt.Sprintf("Peek named a packet: %v (%d bytes); Dequeue handed one over: %v (%d bytes)", peeked, psize, ok, size))
		}
		if !ok {
			break
		}
		ls.record(t, now, pkt, size)
	}
	ls.treeNext = -1
	if n, _ := ls.Tree.Len(); n > 0 {
		ls.treeNext = ls.Tree.NextEvent()
		if ls.treeNext <= now {
			ls.fail(t, now, fmt.Sprintf("Dequeue handed over nothing with %d packets queued, and NextEvent is %s, not after now", n, ls.rel(ls.treeNext)))
		}
	}
}

// record checks a packet the tree handed over at now, releases it and
// adds it to Sent.
func (ls *Lockstep) record(t testing.TB, now int64, pkt *stack.PacketBuffer, size uint32) {
	t.Helper()
	seq := qdisctest.Seq(pkt)
	err := qdisctest.Check(pkt)
	if err == nil && int(size) != pkt.Size() {
		err = fmt.Errorf("packet %d: Dequeue says %d bytes, the packet has %d", seq, size, pkt.Size())
	}
	pkt.DecRef()
	if err != nil {
		ls.fail(t, now, err.Error())
	}
	ls.Sent = append(ls.Sent, Departure{Seq: seq, Class: ls.Model.ClassOf(ls.named[seq]), Size: size, At: now})
	if len(ls.Sent) > len(ls.pkts) {
		ls.fail(t, now, "the tree handed over more packets than it was given")
	}
}

// peek, if PeekFirst, peeks at the tree twice and returns whether it named
// a packet and its size.
func (ls *Lockstep) peek(t testing.TB, now int64) (bool, uint32) {
	t.Helper()
	if !ls.PeekFirst {
		return false, 0
	}
	var sizes [2][4]uint32
	var arrived [2][4]int64
	var n [2]int
	for k := range n {
		n[k] = ls.Tree.Peek(now, sizes[k][:], arrived[k][:])
	}
	if n[0] > 1 || n[0] != n[1] || sizes[0][0] != sizes[1][0] {
		ls.fail(t, now, fmt.Sprintf("two Peeks at once: %d packets %v, then %d %v; want the same, at most one", n[0], sizes[0][:n[0]], n[1], sizes[1][:n[1]]))
	}
	return n[0] == 1, sizes[0][0]
}

// compare checks the departures not yet compared.
func (ls *Lockstep) compare(t testing.TB, now int64) {
	t.Helper()
	want := ls.Model.Sent
	for ; ls.checked < len(want) && ls.checked < len(ls.Sent); ls.checked++ {
		if g, w := ls.Sent[ls.checked], want[ls.checked]; g != w {
			ls.fail(t, now, fmt.Sprintf("departure %d: tree sent %s; Linux sends %s", ls.checked, ls.dep(g), ls.dep(w)))
		}
	}
	if len(ls.Sent) != len(want) {
		var extra string
		if len(ls.Sent) > len(want) {
			extra = "tree's next: " + ls.dep(ls.Sent[len(want)])
		} else {
			extra = "Linux's next: " + ls.dep(want[len(ls.Sent)])
		}
		ls.fail(t, now, fmt.Sprintf("the tree has sent %d packets, Linux %d (%s)", len(ls.Sent), len(want), extra))
	}
}
