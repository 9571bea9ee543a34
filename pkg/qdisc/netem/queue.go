package netem

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/ecn"
)

// Queue is netem as a qdisc.Queue and qdisc.Shaper (sch_netem.c's
// enqueue and dequeue): each packet may be duplicated, lost (or marked),
// sent ahead of the others (reorder), or delayed by the latency, a
// jitter drawn from the distribution and, with a rate, its time on the
// link after the last packet's; it leaves at its time to send, in slots
// where slots are set. Every random number is drawn from one generator,
// in Linux's order, so that a seed repeats a run. It is not safe for
// concurrent use: its lane calls it under its lock. It holds one
// reference to each packet it queues.
type Queue struct {
	st state

	prng                                     prng
	delayCor, dupCor, reorderCor, corruptCor correlated
	loss                                     lossGen

	t tfifo
	// ahead are the packets reorder sent ahead, each put in front of
	// the others as Linux's __qdisc_enqueue_head does, and served first.
	ahead ring
	// counter counts packets delayed since the last one sent ahead.
	counter uint32

	// slotOn says slots are set (Linux: a slot_next of 0 says not);
	// slotNext is when the next one opens.
	slotOn                  bool
	slotNext                int64
	packetsLeft, bytesLeft  int64
	qlen                    int
	backlog                 uint64
	next                    int64
	activated               bool
	peeked                  held
	hasPeeked               bool
	drops, requeues, marked uint64
}

// state is the configuration in force, in the kernel's units (Linux's
// netem_sched_data fields netem_change sets).
type state struct {
	limit                        uint32
	latency, jitter              int64
	dist                         Table
	distName                     string
	lossP, duplicate             Percent
	gap                          uint32
	reorder, corrupt             Percent
	ecn                          bool
	rate                         uint64
	packetOverhead, cellOverhead int32
	cellSize                     uint32
	slot                         *Slot
	slotDist                     Table
	seed                         uint64
	// cfg is the last Config applied over, for show.
	model    *LossModel
	corr     Correlations
	reorderC Percent
	corruptC Percent
}

var (
	_ qdisc.Queue  = (*Queue)(nil)
	_ qdisc.Shaper = (*Queue)(nil)
)

// NewQueue returns netem configured as cfg (netem_init: a random seed,
// unless cfg gives one, and netem_change).
func NewQueue(cfg Config) (*Queue, error) {
	q := &Queue{}
	q.st.seed = rand.Uint64()
	q.prng.seed(q.st.seed)
	if err := q.Change(cfg, 0); err != nil {
		return nil, err
	}
	return q, nil
}

// Change puts cfg in force as netem_change does: the limit, delay,
// jitter, random loss, duplication and gap always (0 where cfg leaves
// them unset), the loss model (random unless cfg names one); the
// correlations, reorder, corrupt, rate, slot, ecn, distribution and seed
// only where cfg gives them, each correlation starting afresh. now
// starts the first slot. The packets held stay.
func (q *Queue) Change(cfg Config, now int64) error {
	if cfg.Latency < 0 || cfg.Jitter < 0 {
		return fmt.Errorf("netem: a negative delay or jitter; give 0 or more")
	}
	if cfg.Corrupt != nil && cfg.Corrupt.Probability != 0 {
		return fmt.Errorf("netem corrupt: netqdisc's netem does not corrupt packets yet (a corrupted packet must fail its checksum at the peer); leave corrupt out")
	}
	s := &q.st
	// The seed first: the correlations below start from a draw of the
	// generator (Linux's from the kernel's entropy, so that there a seed
	// does not repeat a correlated run; here it does).
	if cfg.Seed != nil {
		s.seed = *cfg.Seed
		q.prng.seed(s.seed)
	}
	if cfg.LossModel != nil {
		q.loss = cfg.LossModel.gen()
		s.model = cfg.LossModel
	} else {
		q.loss.kind, s.model = lossRandom, nil
	}
	if cfg.DistName != "" {
		s.dist, s.distName = cfg.Dist, cfg.DistName
	}
	s.limit = cfg.Limit
	s.latency, s.jitter = int64(cfg.Latency), int64(cfg.Jitter)
	s.gap = cfg.Gap
	q.counter = 0
	s.lossP, s.duplicate = cfg.Loss, cfg.Duplicate
	q.loss.p = uint32(cfg.Loss)
	if s.gap != 0 {
		s.reorder = math.MaxUint32
	}
	if c := cfg.Corr; c != nil {
		s.corr = *c
		q.delayCor = newCorrelated(uint32(c.Delay), &q.prng)
		q.loss.corr = newCorrelated(uint32(c.Loss), &q.prng)
		q.dupCor = newCorrelated(uint32(c.Duplicate), &q.prng)
	}
	if r := cfg.Reorder; r != nil {
		s.reorder, s.reorderC = r.Probability, r.Correlation
		q.reorderCor = newCorrelated(uint32(r.Correlation), &q.prng)
	}
	if c := cfg.Corrupt; c != nil {
		s.corrupt, s.corruptC = c.Probability, c.Correlation
		q.corruptCor = newCorrelated(uint32(c.Correlation), &q.prng)
	}
	if r := cfg.Rate; r != nil {
		s.rate, s.packetOverhead, s.cellSize, s.cellOverhead = r.Rate, r.PacketOverhead, r.CellSize, r.CellOverhead
	}
	if cfg.ECN {
		s.ecn = true
	}
	if sl := cfg.Slot; sl != nil {
		c := *sl
		s.slot, s.slotDist = &c, sl.Dist
		q.packetsLeft, q.bytesLeft = slotBound(c.MaxPackets), slotBound(c.MaxBytes)
		q.slotOn = c.MinDelay != 0 || c.MaxDelay != 0 || c.DistJitter != 0
		q.slotNext = now
	}
	// tabledist takes a jitter of at most 2^31-1 ns, as Linux caps it.
	s.jitter = min(s.jitter, math.MaxInt32)
	return nil
}

// slotBound is a slot's packets or bytes, Linux's INT_MAX for 0.
func slotBound(n int32) int64 {
	if n == 0 {
		return math.MaxInt32
	}
	return int64(n)
}

// gen returns m's loss generator, in its first state.
func (m *LossModel) gen() lossGen {
	if m.GE {
		return lossGen{kind: lossGE, state: goodState, a1: uint32(m.P), a2: uint32(m.R), a3: uint32(m.H), a4: uint32(m.K1)}
	}
	return lossGen{kind: loss4State, state: txInGap, a1: uint32(m.P13), a2: uint32(m.P31), a3: uint32(m.P32), a4: uint32(m.P14), a5: uint32(m.P23)}
}

// Enqueue implements qdisc.Queue.Enqueue (netem_enqueue). A packet lost
// is taken, released and counted as a drop; past the limit it is
// refused (the caller keeps it) and counted.
func (q *Queue) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	q.activated = false
	return q.enqueue(pkt, size, now, false)
}

// enqueue is netem_enqueue for pkt; dup is set for a duplicate, which is
// not duplicated again.
func (q *Queue) enqueue(pkt *stack.PacketBuffer, size uint32, now int64, dup bool) bool {
	s := &q.st
	count := 1
	if s.duplicate != 0 && !dup && uint32(s.duplicate) >= q.dupCor.draw(&q.prng) {
		count++
	}
	if q.loss.lost(&q.prng) {
		if s.ecn && ecn.MarkCE(pkt) {
			q.drops++ // Linux counts a mark as a drop
			q.marked++
		} else {
			count--
		}
	}
	if count == 0 {
		q.drops++
		pkt.DecRef()
		return true
	}
	var twin *stack.PacketBuffer
	if count > 1 {
		twin = pkt.Clone()
	}
	if q.qlen >= int(s.limit) {
		// Refused: the caller keeps pkt; the twin was netem's own.
		q.drops++
		if twin != nil {
			twin.DecRef()
		}
		return false
	}
	if twin != nil && !q.enqueue(twin, size, now, true) {
		twin.DecRef()
	}
	if s.gap == 0 || q.counter+1 < s.gap || uint32(s.reorder) < q.reorderCor.draw(&q.prng) {
		delay := tabledist(s.latency, int32(s.jitter), &q.delayCor, &q.prng, s.dist)
		at := now
		if s.rate != 0 {
			if last, ok := q.lastTTS(); ok {
				delay = max(delay-(last-now), 0)
				at = last
			}
			delay += q.packetTime(size)
		}
		q.counter++
		q.hold(held{pkt: pkt, size: size, tts: at + delay, arrived: now})
		return true
	}
	q.counter = 0
	q.requeues++
	q.ahead.pushFront(held{pkt: pkt, size: size, tts: now, arrived: now})
	q.qlen++
	q.backlog += uint64(size)
	q.activated = true
	return true
}

// hold puts h in the time-ordered queue.
func (q *Queue) hold(h held) {
	q.t.push(h)
	q.qlen++
	q.backlog += uint64(h.size)
	if h.tts < q.next || q.qlen == 1 {
		q.activated = true
	}
}

// lastTTS is the latest time to send of the packets held: the reference
// netem's rate counts from (the oldest sent ahead, and the latest in the
// time-ordered queue).
func (q *Queue) lastTTS() (int64, bool) {
	last, ok := q.t.last()
	if q.ahead.n > 0 {
		if tts := q.ahead.back().tts; !ok || tts > last {
			last, ok = tts, true
		}
	}
	return last, ok
}

// packetTime is Linux's packet_time_ns: size plus the packet overhead,
// rounded up to whole cells each with its overhead, at the rate. A
// packet its negative overhead takes below 0 takes no time (Linux's
// unsigned sum would make it take years).
func (q *Queue) packetTime(size uint32) int64 {
	s := &q.st
	n := max(int64(size)+int64(s.packetOverhead), 0)
	if s.cellSize != 0 {
		cells := n / int64(s.cellSize)
		if n > cells*int64(s.cellSize) {
			cells++
		}
		n = cells * (int64(s.cellSize) + int64(s.cellOverhead))
	}
	return int64(uint64(n) * uint64(time.Second) / s.rate)
}

// Dequeue implements qdisc.Queue.Dequeue (netem_dequeue): a packet sent
// ahead first; else the one whose time has come, if its slot is open.
func (q *Queue) Dequeue(now int64) (*stack.PacketBuffer, uint32, bool) {
	if q.hasPeeked {
		q.hasPeeked = false
		q.qlen--
		q.backlog -= uint64(q.peeked.size)
		return q.peeked.pkt, q.peeked.size, true
	}
	h, ok := q.take(now)
	if !ok {
		return nil, 0, false
	}
	q.qlen--
	q.backlog -= uint64(h.size)
	return h.pkt, h.size, true
}

// take removes the next packet that may leave at now, leaving the counts
// to the caller; with none, it sets next.
func (q *Queue) take(now int64) (held, bool) {
	if q.ahead.n > 0 {
		return q.ahead.popFront(), true
	}
	h, ok := q.t.peek()
	if !ok {
		return held{}, false
	}
	if q.slotOn && q.slotNext < h.tts {
		q.nextSlot(now)
	}
	if h.tts <= now && (!q.slotOn || q.slotNext <= now) {
		q.t.pop()
		if q.slotOn {
			q.packetsLeft--
			q.bytesLeft -= int64(h.size)
			if q.packetsLeft <= 0 || q.bytesLeft <= 0 {
				q.nextSlot(now)
			}
		}
		return h, true
	}
	q.next = h.tts
	if q.slotOn {
		q.next = max(h.tts, q.slotNext)
	}
	return held{}, false
}

// nextSlot opens the next slot (Linux's get_slot_next): after a delay
// between the least and the most, or drawn from the slot's distribution,
// with its packets and bytes.
func (q *Queue) nextSlot(now int64) {
	sl := q.st.slot
	var d int64
	if q.st.slotDist == nil && sl.DistJitter == 0 {
		d = int64(sl.MinDelay) + int64((uint64(sl.MaxDelay-sl.MinDelay)*uint64(q.prng.next()))>>32)
	} else {
		d = tabledist(int64(sl.DistDelay), int32(min(sl.DistJitter, math.MaxInt32)), nil, &q.prng, q.st.slotDist)
	}
	q.slotNext = now + d
	q.packetsLeft, q.bytesLeft = slotBound(sl.MaxPackets), slotBound(sl.MaxBytes)
}

// NextEvent implements qdisc.Shaper.NextEvent: when the packet that
// leaves next may, in its slot.
func (q *Queue) NextEvent() int64 { return q.next }

// Activated implements qdisc.Shaper.Activated: the last Enqueue queued a
// packet that may leave before the lane's wait ends.
func (q *Queue) Activated() bool { return q.activated }

// Peek implements qdisc.Queue.Peek: as Linux's qdisc_peek_dequeued, the
// packet that leaves next is taken and kept, counted, for Dequeue.
func (q *Queue) Peek(now int64, sizes []uint32, arrived []int64) int {
	if len(sizes) == 0 {
		return 0
	}
	if !q.hasPeeked {
		h, ok := q.take(now)
		if !ok {
			return 0
		}
		q.peeked, q.hasPeeked = h, true
	}
	sizes[0], arrived[0] = q.peeked.size, q.peeked.arrived
	return 1
}

// Purge implements qdisc.Queue.Purge.
func (q *Queue) Purge() (int, uint64) {
	n, b := q.qlen, q.backlog
	if q.hasPeeked {
		q.peeked.pkt.DecRef()
		q.hasPeeked = false
	}
	for q.ahead.n > 0 {
		q.ahead.popFront().pkt.DecRef()
	}
	q.t.drain(func(h held) { h.pkt.DecRef() })
	q.qlen, q.backlog = 0, 0
	return n, b
}

// Len implements qdisc.Queue.Len.
func (q *Queue) Len() (int, uint64) { return q.qlen, q.backlog }

// Drops implements qdisc.Queue.Drops: the packets lost, marked in their
// place (as Linux counts them) or refused past the limit.
func (q *Queue) Drops() uint64 { return q.drops }

// Requeues returns the packets sent ahead (Linux counts them as
// requeues).
func (q *Queue) Requeues() uint64 { return q.requeues }

// String describes the configuration in force as `tc qdisc show` does.
func (q *Queue) String() string { return "netem " + q.config().show(q.st.seed) }

// config returns the configuration in force as a Config.
func (q *Queue) config() Config {
	s := &q.st
	c := Config{Limit: s.limit, Latency: time.Duration(s.latency), Jitter: time.Duration(s.jitter), Dist: s.dist, DistName: s.distName,
		Loss: s.lossP, Duplicate: s.duplicate, Gap: s.gap, LossModel: s.model, ECN: s.ecn, Slot: s.slot}
	corr := s.corr
	c.Corr = &corr
	c.Reorder = &Chance{Probability: s.reorder, Correlation: s.reorderC}
	c.Corrupt = &Chance{Probability: s.corrupt, Correlation: s.corruptC}
	if s.rate != 0 {
		c.Rate = &RateConfig{Rate: s.rate, PacketOverhead: s.packetOverhead, CellSize: s.cellSize, CellOverhead: s.cellOverhead}
	}
	return c
}
