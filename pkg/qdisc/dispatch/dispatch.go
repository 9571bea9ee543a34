// Package dispatch runs the queues that netqdisc's disciplines are built
// from. A Lane is one bounded ring of packets, one dispatcher goroutine that
// drains it to the lower link in batches, and an optional Gate (tbf's token
// bucket) that says when the head packet may leave. fifo is lanes without a
// gate; tbf is lanes with one.
//
// Why one shared mechanism: the parts that are easy to get subtly wrong
// are the same in every qdisc — when to wake the dispatcher, how a closed
// qdisc refuses packets and releases what it holds, how a batch's
// references are released and counted — so they are written once.
//
// Where this differs from gVisor's upstream qdiscs:
//   - Enqueue wakes the dispatcher only when it is idle; a dispatcher that
//     is running will see the packet, and one that waits for tokens does
//     not need it. Upstream asserts a waker on every packet, and its tbf
//     re-arms a freshly allocated timer for each one.
//   - A waiting lane arms one timer, created once and Reset thereafter: no
//     allocation per wake.
//   - A Gate is asked with one clock reading per batch, not per packet.
//   - The backlog is bounded in packets and, optionally, bytes.
//   - Close is safe against concurrent Enqueue: the closed flag and the
//     ring share one lock, so a packet is either queued before Close (and
//     released by it) or refused with ErrClosedForSend.
//   - Statistics: packets and bytes sent, drops, overlimits and backlog.
package dispatch

import (
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/sleep"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/packetbuf"
)

// Gate decides when the head packet of a lane may leave.
type Gate interface {
	// Admit is asked, with the lane's lock held, whether a packet of size
	// bytes may leave at now (nanoseconds on the lane's clock). It answers
	// 0, and takes the packet's tokens, if it may; otherwise how many
	// nanoseconds until it may, and takes nothing.
	Admit(now int64, size uint32) (wait int64)
}

// state is what a lane's dispatcher is doing.
type state uint8

const (
	// idle: asleep with an empty ring; Enqueue must wake it.
	idle state = iota
	// running: awake, or woken; it looks at the ring before sleeping again.
	running
	// throttled: asleep until its timer fires; Enqueue need not wake it.
	throttled
	// stopped: closed and drained.
	stopped
)

// Config is a lane's shape.
type Config struct {
	// Lower is where batches go.
	Lower stack.LinkWriter
	// MaxPackets bounds the ring in packets (at least 1).
	MaxPackets int
	// MaxBytes, if not 0, bounds the bytes queued: a packet that would take
	// the backlog past it is dropped, as Linux's bfifo does.
	MaxBytes uint64
	// Gate, if not nil, is asked before each packet leaves, and Clock gives
	// it the time and arms the lane's timer.
	Gate  Gate
	Clock tcpip.Clock
}

// Lane is one queue and its dispatcher. Use it through a pointer, after
// Init and Start.
type Lane struct {
	lower    stack.LinkWriter
	maxBytes uint64
	gate     Gate
	clock    tcpip.Clock
	timer    tcpip.Timer

	wake    sleep.Waker
	closing sleep.Waker

	mu sync.Mutex
	// +checklocks:mu
	ring packetbuf.Ring
	// +checklocks:mu
	state state
	// +checklocks:mu
	closed bool

	sentBytes   atomic.Uint64
	sentPackets atomic.Uint64
	drops       atomic.Uint64
	overlimits  atomic.Uint64

	// Lanes sit side by side in a slice, each written by its own producers
	// and dispatcher: keep a lane's lines to itself.
	_ [cacheLine]byte
}

// cacheLine is generous: two lines, for CPUs that prefetch in pairs.
const cacheLine = 128

// Init sets the lane up; it must be called once, before Start.
func (l *Lane) Init(cfg Config) {
	l.lower = cfg.Lower
	l.maxBytes = cfg.MaxBytes
	l.gate = cfg.Gate
	l.clock = cfg.Clock
	l.mu.Lock()
	l.ring.Init(cfg.MaxPackets)
	l.state = idle
	l.mu.Unlock()
	if l.gate != nil {
		// One timer for the lane's life: created stopped, then Reset.
		l.timer = l.clock.AfterFunc(time.Hour, l.onTimer)
		l.timer.Stop()
	}
}

// Start starts the lane's dispatcher goroutine; wg.Done is called when it
// has stopped, after Close.
func (l *Lane) Start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.loop()
	}()
}

// Enqueue queues pkt, taking a reference of its own. It answers
// ErrClosedForSend after Close, and ErrNoBufferSpace (counting a drop) when
// the ring or the byte bound is full; in both cases it takes nothing.
func (l *Lane) Enqueue(pkt *stack.PacketBuffer) tcpip.Error {
	size := uint64(pkt.Size())
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return &tcpip.ErrClosedForSend{}
	}
	if !l.ring.HasSpace() || (l.maxBytes != 0 && l.ring.Bytes()+size > l.maxBytes) {
		l.mu.Unlock()
		l.drops.Add(1)
		return &tcpip.ErrNoBufferSpace{}
	}
	l.ring.PushBack(pkt.IncRef())
	wake := l.state == idle
	if wake {
		l.state = running
	}
	l.mu.Unlock()
	if wake {
		l.wake.Assert()
	}
	return nil
}

// CountDrop counts a packet the owner refused before queueing it.
func (l *Lane) CountDrop() { l.drops.Add(1) }

// Close stops the lane: later Enqueues are refused, and the dispatcher
// releases every queued packet and exits. It does not wait; the owner
// waits on the WaitGroup given to Start. Close is idempotent.
func (l *Lane) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	l.closing.Assert()
}

// Quiescent reports whether the dispatcher is asleep with nothing it can do
// before its timer fires or a packet arrives. Tests use it to step a
// faketime.ManualClock deterministically.
func (l *Lane) Quiescent() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state != running
}

// Stats returns the lane's counters and backlog.
func (l *Lane) Stats() qdisc.Stats {
	l.mu.Lock()
	backlogBytes, backlogPackets := l.ring.Bytes(), uint64(l.ring.Len())
	l.mu.Unlock()
	return qdisc.Stats{
		Bytes:          l.sentBytes.Load(),
		Packets:        l.sentPackets.Load(),
		Drops:          l.drops.Load(),
		Overlimits:     l.overlimits.Load(),
		BacklogBytes:   backlogBytes,
		BacklogPackets: backlogPackets,
	}
}

// onTimer runs when the tokens the head packet waited for have come.
func (l *Lane) onTimer() {
	l.mu.Lock()
	wake := l.state == throttled
	if wake {
		l.state = running
	}
	l.mu.Unlock()
	if wake {
		l.wake.Assert()
	}
}

func (l *Lane) loop() {
	var s sleep.Sleeper
	s.AddWaker(&l.wake)
	s.AddWaker(&l.closing)
	defer s.Done()
	var batch stack.PacketBufferList
	for {
		if s.Fetch(true) == &l.closing {
			l.drain()
			return
		}
		l.run(&batch)
	}
}

// run sends what the gate allows, batch by batch, until the ring is empty,
// the gate says wait, or the lane is closed.
func (l *Lane) run(batch *stack.PacketBufferList) {
	var sizes [qdisc.BatchSize]uint32
	for {
		l.mu.Lock()
		if l.closed {
			// The closing waker is asserted; loop drains.
			l.mu.Unlock()
			return
		}
		if l.ring.IsEmpty() {
			l.state = idle
			l.mu.Unlock()
			return
		}
		var now, wait int64
		if l.gate != nil {
			now = int64(l.clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
		}
		n := 0
		for n < qdisc.BatchSize {
			pkt, size := l.ring.PeekFront()
			if pkt == nil {
				break
			}
			if l.gate != nil {
				if wait = l.gate.Admit(now, size); wait > 0 {
					break
				}
			}
			l.ring.RemoveFront()
			batch.PushBack(pkt)
			sizes[n] = size
			n++
		}
		if n == 0 {
			// The head packet must wait for tokens: sleep until they have
			// come. The timer is armed under the lock, so that a test that
			// sees the lane quiescent also sees the timer armed. (A batch
			// that ended on a refused packet is written first, and the next
			// pass arms the timer: the lane never sleeps with a batch in
			// hand.)
			l.state = throttled
			l.overlimits.Add(1)
			l.timer.Reset(time.Duration(wait))
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		l.write(batch, sizes[:n])
	}
}

// write hands batch to the lower link, releases the batch's references and
// counts what the link took; what it refused is dropped.
func (l *Lane) write(batch *stack.PacketBufferList, sizes []uint32) {
	n, _ := l.lower.WritePackets(*batch)
	batch.Reset()
	n = max(0, min(n, len(sizes)))
	var bytes uint64
	for _, s := range sizes[:n] {
		bytes += uint64(s)
	}
	l.sentPackets.Add(uint64(n))
	l.sentBytes.Add(bytes)
	if n < len(sizes) {
		l.drops.Add(uint64(len(sizes) - n))
	}
}

// drain runs on the dispatcher after Close: it stops the timer and releases
// every queued packet, counting each as a drop.
func (l *Lane) drain() {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Lock()
	dropped, _ := l.ring.Purge()
	l.state = stopped
	l.mu.Unlock()
	l.drops.Add(uint64(dropped))
}
