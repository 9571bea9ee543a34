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
// corrupted, sent ahead of the others (reorder), or delayed by the
// latency, a jitter drawn from the distribution and, with a rate, its
// time on the link after the last packet's; it leaves at its time to
// send, in slots where slots are set. Every random number is drawn from
// one generator, in Linux's order, so that a seed repeats a run; the
// byte and bit corruption flips, which Linux draws from the kernel's
// entropy, from a second one seeded from the same seed. It is not safe for
// concurrent use: its lane calls it under its lock. It holds one
// reference to each packet it queues.
type Queue struct {
	st state

	prng                                     prng
	delayCor, dupCor, reorderCor, corruptCor correlated
	loss                                     lossGen
	// flip picks the byte and bit of a corrupted packet (corruptBit).
	flip prng
	// path is the path netem is on, for corruption.
	path path
	// clock reads the lane's clock, ns, for an arrival the lane did not
	// read (immediate.go); nil for a Queue its caller gives times.
	clock func() int64
	// plain is drawsNothing(), as of the last Change (fast.go).
	plain bool
	// orphanOnEnqueue: the Queue orphans what it holds itself
	// (orphan.go), as a child under another kind's shaper, whose lane
	// hands it the sender's packet; netem's own Discipline orphans before
	// its lane.
	orphanOnEnqueue bool

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
	_ qdisc.Queue         = (*Queue)(nil)
	_ qdisc.Shaper        = (*Queue)(nil)
	_ qdisc.ArrivalBlind  = (*Queue)(nil)
	_ qdisc.BatchDequeuer = (*Queue)(nil)
)

// NewQueue returns netem configured as cfg (netem_init: a random seed,
// unless cfg gives one, and netem_change).
func NewQueue(cfg Config) (*Queue, error) {
	q := &Queue{}
	q.st.seed = rand.Uint64()
	q.seed(q.st.seed)
	if err := q.Change(cfg, 0); err != nil {
		return nil, err
	}
	return q, nil
}

// seed seeds netem's generators: its own as Linux seeds it, and the one
// corruption picks bits with from the seed mixed with corruptSeedMix.
func (q *Queue) seed(seed uint64) {
	q.prng.seed(seed)
	q.flip.seed(seed ^ corruptSeedMix)
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
	s := &q.st
	// The seed first: the correlations below start from a draw of the
	// generator (Linux's from the kernel's entropy, so that there a seed
	// does not repeat a correlated run; here it does).
	if cfg.Seed != nil {
		s.seed = *cfg.Seed
		q.seed(s.seed)
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
	if q.timed() {
		q.restamp(now)
	}
	q.plain = q.drawsNothing()
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
// refused (the caller keeps it) and counted. now may be qdisc.Unstamped
// (ArrivalBlind): netem reads its clock if it gives the packet a time.
func (q *Queue) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	q.activated = false
	if q.plain && q.t.immediateOnly() {
		return q.enqueuePlain(pkt, size, now)
	}
	if q.orphanOnEnqueue && q.orphans() {
		return q.enqueueOrphan(pkt, size, now)
	}
	return q.enqueue(pkt, size, now, false) != refused
}

// outcome is what netem_enqueue did with a packet.
type outcome uint8

const (
	// queued: held, to leave (a packet marked in place of its loss too).
	queued outcome = iota
	// lost: taken, released and counted as a drop (Linux's
	// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS).
	lost
	// refused: not taken, counted as a drop (NET_XMIT_DROP): the caller
	// keeps its reference.
	refused
)

// enqueue is netem_enqueue for pkt; dup is set for a duplicate, which is
// not duplicated again.
func (q *Queue) enqueue(pkt *stack.PacketBuffer, size uint32, now int64, dup bool) outcome {
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
		return lost
	}
	var twin *stack.PacketBuffer
	if count > 1 {
		twin = pkt.Clone() // before pkt is corrupted
	}
	var c corrupted
	if s.corrupt != 0 && uint32(s.corrupt) >= q.corruptCor.draw(&q.prng) {
		var ok bool
		if c, ok = q.corrupt(pkt, size); !ok || c.pkt == nil {
			return q.dropCorrupted(pkt, twin, c, now, dup)
		}
	}
	if q.qlen >= int(s.limit) {
		// Refused: the caller keeps pkt; the twin, the copy and the
		// segments were netem's own (Linux's qdisc_drop_all counts one).
		q.drops++
		if twin != nil {
			twin.DecRef()
		}
		c.release()
		return refused
	}
	if twin != nil && q.enqueue(twin, size, now, true) == refused {
		twin.DecRef()
	}
	if c.pkt != nil {
		pkt.DecRef() // the copy stands for it
		pkt, size = c.pkt, c.size
	}
	q.queue(pkt, size, now)
	if len(c.rest) > 0 {
		q.enqueueSegments(c.rest, now, dup)
	}
	return queued
}

// dropCorrupted is netem_enqueue's drop of a packet it was to corrupt
// but could not cut (c.rest empty) or copy and check (the first of
// c.rest's segments), counted: the twin goes too, uncounted, and the
// other segments are queued.
func (q *Queue) dropCorrupted(pkt, twin *stack.PacketBuffer, c corrupted, now int64, dup bool) outcome {
	q.drops++
	if twin != nil {
		twin.DecRef()
	}
	if len(c.rest) == 0 {
		return refused
	}
	pkt.DecRef() // its segments stand for it
	q.enqueueSegments(c.rest, now, dup)
	return queued
}

// enqueueSegments queues the other segments of a GSO packet netem cut to
// corrupt the first, each as netem_enqueue queues a packet (a duplicate's
// are not duplicated), charged its own size. One lost or refused counts a
// second drop, as Linux counts what qdisc_enqueue did not queue.
func (q *Queue) enqueueSegments(segs []*stack.PacketBuffer, now int64, dup bool) {
	for _, p := range segs {
		switch q.enqueue(p, uint32(p.Size()), now, dup) {
		case refused:
			q.drops++
			p.DecRef()
		case lost:
			q.drops++
		}
	}
}

// queue holds pkt, taken: sent ahead of the others if reorder picks it,
// else at its time to send.
func (q *Queue) queue(pkt *stack.PacketBuffer, size uint32, now int64) {
	s := &q.st
	if q.untimed() { // no time to keep: due at once (immediate.go)
		q.counter++
		q.hold(held{pkt: pkt, size: size, tts: immediate, arrived: now})
		return
	}
	now = q.arrival(now)
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
		return
	}
	q.counter = 0
	q.requeues++
	q.ahead.pushFront(held{pkt: pkt, size: size, tts: now, arrived: now})
	q.qlen++
	q.backlog += uint64(size)
	q.activated = true
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
	if pkt, size, ok := q.dequeueLinear(now); ok {
		return pkt, size, true
	}
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
// packet that leaves next is taken and kept, counted, for Dequeue. Its
// arrival is given as netem lets it go, its time to send: a ceiling over
// netem (SetCeiling) books it from then, as a tbf grafted under Linux's
// netem sees it when netem_dequeue hands it over, not from when it came.
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
	sizes[0], arrived[0] = q.peeked.size, q.peeked.tts
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
