package cake

import (
	"math/rand/v2"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// queues is the number of flow queues in each tin (CAKE_QUEUES), and ways
// the associativity of its hash (CAKE_SET_WAYS).
const (
	queues = 1024
	ways   = 8
)

// none is the null index of entries and flows.
const none = -1

// The sets a flow is in (CAKE_SET_*).
const (
	setNone = iota
	setSparse
	setSparseWait // counted as sparse, served in the bulk rotation
	setBulk
	setDecaying
)

// entry is a queued packet.
type entry struct {
	pkt  *stack.PacketBuffer
	next int32
	// size is the length the qdisc was given (Linux's qdisc_pkt_len),
	// adj the length the shaper is charged (cake_overhead), mem the
	// packet's memory.
	size, adj, mem uint32
	enq            int64
}

// pool holds every queued entry in one slice, threaded by next into the
// flows' queues and a free list. It grows to the most packets queued at
// once and is reused: queueing allocates only past that.
type pool struct {
	e    []entry
	free int32
}

func (p *pool) alloc() int32 {
	if p.free != none {
		i := p.free
		p.free = p.e[i].next
		return i
	}
	p.e = append(p.e, entry{})
	return int32(len(p.e) - 1)
}

func (p *pool) release(i int32) {
	p.e[i] = entry{next: p.free}
	p.free = i
}

// flow is one of a tin's queues (struct cake_flow).
type flow struct {
	head, tail int32
	deficit    int32
	dropped    uint32
	cv         cobaltVars
	srchost    uint16
	dsthost    uint16
	set        uint8
	// list is the flow's list in its tin (listNone, or a rotation), prev
	// and next its neighbours there.
	list       uint8
	prev, next int16
}

// host is a slot of a tin's host table (struct cake_host).
type host struct {
	srcTag, dstTag   uint32
	srcBulk, dstBulk uint16
}

// The flow lists of a tin.
const (
	listNone = iota
	listNew
	listOld
	listDecaying
)

// flowList is a doubly linked list of a tin's flows.
type flowList struct{ head, tail int16 }

// tin is one of cake's priority tins (struct cake_tin_data).
type tin struct {
	flows       [queues]flow
	backlogs    [queues]uint32
	tags        [queues]uint32
	overflowIdx [queues]uint16
	hosts       [queues]host
	flowQuantum uint16

	cp            cobaltParams
	dropOverlimit uint32
	bulk, sparse  uint16
	decaying      uint16
	unresponsive  uint16
	maxSkblen     uint32
	lists         [4]flowList // by listNew, listOld, listDecaying

	timeNext  int64
	rateNS    uint64
	rateBps   uint64
	rateShift uint8

	quantum uint16
	deficit int32
	backlog uint32
	dropped uint32
	ecnMark uint32
	packets uint32
	bytes   uint64
	ackDrop uint32

	avgDelay, peakDelay, baseDelay uint64

	wayDirects, wayHits, wayMisses, wayCollisions uint32
}

// heapEntry names a flow of a tin in the overflow heap.
type heapEntry struct {
	tin  uint8
	flow uint16
}

// Sched is cake's queue: tins of flow queues, each flow under COBALT,
// served by DRR++ under a deficit-mode shaper, as sch_cake.c's
// cake_enqueue and cake_dequeue run them. It is a qdisc.Shaper for a
// dispatch lane (Discipline), and is not safe for concurrent use: the
// lane's lock guards it. Times are ns on the caller's clock, given to
// every call; Sched reads no clock.
//
// Each packet queued holds one reference, which Sched releases when it
// drops the packet (COBALT, the ACK filter, the memory limit, Purge) or
// hands to the caller with Dequeue.
type Sched struct {
	cfg    Config
	mtu    uint32
	hasher flowhash.Hasher
	rnd    rand.PCG

	tins     *[maxTins]tin
	tinCnt   int
	tinIndex *[64]uint8
	tinOrder []uint8

	heap            [maxTins * queues]heapEntry
	overflowTimeout uint16

	pool pool

	timeNext     int64
	failsafeNext int64
	rateNS       uint64
	rateShift    uint8
	rateBps      uint64

	bufferUsed    uint64
	bufferMaxUsed uint64
	bufferLimit   uint64

	curTin  int
	curFlow int

	lastPacketTime    int64
	avgWindowBegin    int64
	avgPacketInterval uint64
	avgWindowBytes    uint64
	avgPeakBandwidth  uint64
	lastReconfig      int64

	avgNetoff            uint64
	maxNetlen, maxAdjlen uint32
	minNetlen, minAdjlen uint32

	qlen    int
	backlog uint64
	drops   uint64
	// purged counts the packets Purge released.
	purged uint64
	// overlimits counts the times cake found its shaper ahead of now
	// with packets to send (Linux's overlimits).
	overlimits uint64

	// activated is Activated's answer for the last Enqueue.
	activated bool
	// peeked is a packet Peek took and the next Dequeue returns.
	peeked    int32
	hasPeeked bool
}

var _ qdisc.Shaper = (*Sched)(nil)

// quantumDiv[n] is 65535/n (n >= 1): a flow's quantum shared by n bulk
// flows of its host, in 1/65536ths.
var quantumDiv = func() (d [queues + 1]uint16) {
	d[0] = 65535
	for i := 1; i <= queues; i++ {
		d[i] = uint16(65535 / i)
	}
	return d
}()

// NewSched returns an empty cake queue configured as cfg, on a link whose
// MTU plus link header is mtu (Linux's psched_mtu), at time now. It
// returns a *ConfigError for an invalid cfg.
func NewSched(cfg Config, mtu uint32, now int64) (*Sched, error) {
	return newSched(cfg, mtu, now, flowhash.New(), rand.Uint64())
}

// newSched is NewSched with the hash and random seeds given (tests).
func newSched(cfg Config, mtu uint32, now int64, h flowhash.Hasher, seed uint64) (*Sched, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if mtu == 0 {
		return nil, configErr("mtu", "the link's MTU plus header is 0; cake needs the link's real MTU")
	}
	s := &Sched{cfg: cfg, mtu: mtu, hasher: h, tins: new([maxTins]tin), peeked: none}
	s.rnd.Seed(seed, seed^0x9e3779b97f4a7c15)
	s.pool.free = none
	for i := range s.tins {
		b := &s.tins[i]
		for l := range b.lists {
			b.lists[l] = flowList{none, none}
		}
		for j := range b.flows {
			f := &b.flows[j]
			f.head, f.tail, f.prev, f.next = none, none, none, none
			k := j*maxTins + i
			s.heap[k] = heapEntry{tin: uint8(i), flow: uint16(j)}
			b.overflowIdx[j] = uint16(k)
		}
	}
	s.rateBps = cfg.Bandwidth
	s.reconfigure()
	s.avgPeakBandwidth = s.rateBps
	s.minNetlen, s.minAdjlen = ^uint32(0), ^uint32(0)
	s.timeNext, s.failsafeNext = now, now
	// autorate-ingress's times stay 0, as cake_init's (doc.go).
	return s, nil
}

// Config returns the configuration in force.
func (s *Sched) Config() Config { return s.cfg }

// reconfigure is cake_reconfigure: the tins' rates, quanta and COBALT
// tuning for the mode and the rate, the memory limit.
func (s *Sched) reconfigure() {
	mode := s.cfg.Diffserv
	s.tinCnt = tinCount[mode]
	s.tinIndex = &dscpTins[mode]
	s.tinOrder = tinOrder[mode]
	rates, quanta := tinShares(mode, s.rateBps)
	target, rtt := uint64(s.cfg.Target), uint64(s.cfg.RTT)
	for i := range s.tinCnt {
		b := &s.tins[i]
		b.setRate(rates[i], s.mtu, target, rtt)
		b.quantum = quanta[i]
	}
	for i := s.tinCnt; i < maxTins; i++ {
		// cake_clear_tin (a no-op here: Change refuses to drop what the
		// tins left out hold) leaves cur_tin at the last tin it clears,
		// where unlimited mode's DRR starts next (and wraps to tin 0).
		s.tins[i].cp.mtuTime = s.tins[0].cp.mtuTime
		s.curTin = i
	}
	s.rateNS, s.rateShift = s.tins[0].rateNS, s.tins[0].rateShift
	c := s.cfg
	c.Bandwidth = s.rateBps
	s.bufferLimit = uint64(c.MemoryLimit(s.mtu))
}

// random32 is Linux's get_random_u32 (its low 16 bits get_random_u16).
// COBALT's BLUE draws from s.rnd the same way (shouldDrop).
func (s *Sched) random32() uint32 { return uint32(s.rnd.Uint64()) }

// flowQuantum is cake_get_flow_quantum: the tin's flow quantum shared by
// the bulk flows of the flow's busiest host (in the dual and triple
// modes), dithered.
func (s *Sched) flowQuantum(b *tin, f *flow) int32 {
	load := uint16(1)
	if dualSrc(s.cfg.Isolation) {
		load = max(load, b.hosts[f.srchost].srcBulk)
	}
	if dualDst(s.cfg.Isolation) {
		load = max(load, b.hosts[f.dsthost].dstBulk)
	}
	return int32((uint32(b.flowQuantum)*uint32(quantumDiv[load]) + uint32(uint16(s.random32()))) >> 16)
}

// overhead is cake_overhead: what the shaper is charged for a packet of
// size bytes (Linux's qdisc_pkt_len) whose link header is off bytes: each
// of a GSO packet's segments charged as its own packet.
func (s *Sched) overhead(pkt *stack.PacketBuffer, size uint32) uint32 {
	off := uint32(len(pkt.LinkHeader().Slice()))
	s.avgNetoff = ewma(s.avgNetoff, uint64(off)<<16, 8)
	segs := uint32(gso.Segments(pkt))
	if segs <= 1 {
		return s.calcOverhead(size, off)
	}
	hdr := uint32(max(pkt.Size()-pkt.Data().Size(), 0))
	seg := uint32(pkt.GSOOptions.MSS) + hdr
	if uint64(seg)*uint64(segs-1) >= uint64(size) {
		return s.calcOverhead(size, off) // not the packet WireSize sized
	}
	last := size - seg*(segs-1)
	return s.calcOverhead(seg, off)*(segs-1) + s.calcOverhead(last, off)
}

// calcOverhead is cake_calc_overhead: WireLen, with the lengths seen
// recorded for the statistics.
func (s *Sched) calcOverhead(length, off uint32) uint32 {
	net := length
	if !s.cfg.Raw {
		net = uint32(max(int64(length)-int64(off), 0))
	}
	s.maxNetlen = max(s.maxNetlen, net)
	s.minNetlen = min(s.minNetlen, net)
	adj := uint32(min(WireLen(s.cfg, length, off), 1<<32-1))
	s.maxAdjlen = max(s.maxAdjlen, adj)
	s.minAdjlen = min(s.minAdjlen, adj)
	return adj
}

// ewma is cake_ewma: avg moved 1/2^shift of the way to sample.
func ewma(avg, sample uint64, shift uint) uint64 {
	avg -= avg >> shift
	avg += sample >> shift
	return avg
}

// selectTin is cake_select_tin: the tin by DSCP (besteffort: tin 0), nh
// pkt's network header if the send path parsed it. The netstack has no
// firewall mark or skb priority to override it.
func (s *Sched) selectTin(pkt *stack.PacketBuffer, nh []byte) int {
	var d uint8
	if s.cfg.Wash {
		d = dscp(pkt, nh, true)
	}
	if s.cfg.Diffserv == BestEffort {
		return 0
	}
	if !s.cfg.Wash {
		d = dscp(pkt, nh, false)
	}
	t := int(s.tinIndex[d&63])
	if t >= s.tinCnt {
		t = 0
	}
	return t
}

// Enqueue implements qdisc.Queue.Enqueue: cake_enqueue at now. It takes
// every packet but a GSO packet split-gso cannot cut (false: a drop,
// nothing taken), and makes room past the memory limit by dropping from
// the head of the fattest flow of any tin.
func (s *Sched) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	nh := pkt.NetworkHeader().Slice()
	ti := s.selectTin(pkt, nh)
	b := &s.tins[ti]
	idx := s.hash(b, pkt, nh)
	f := &b.flows[idx]

	// Keep the shaper's state from going stale while idle.
	if b.backlog == 0 {
		if b.timeNext < now {
			b.timeNext = now
		}
		if s.qlen == 0 {
			if s.timeNext < now {
				s.failsafeNext, s.timeNext = now, now
			} else if s.timeNext > now && s.failsafeNext > now {
				s.overlimits++
			}
		}
	}
	s.activated = s.qlen == 0
	b.maxSkblen = max(b.maxSkblen, size)

	if s.cfg.SplitGSO && gso.Segments(pkt) > 1 {
		hdr := uint64(max(pkt.Size()-pkt.Data().Size(), 0))
		pieces, err := gso.Split(pkt, hdr+uint64(pkt.GSOOptions.MSS))
		if err != nil {
			s.drops++
			return false
		}
		pkt.DecRef()
		var slen uint64
		for _, p := range pieces {
			psize := uint32(min(gso.WireSize(p), 1<<32-1))
			i := s.pool.alloc()
			s.pool.e[i] = entry{pkt: p, next: none, size: psize, mem: uint32(p.MemSize()), enq: now}
			s.pool.e[i].adj = s.overhead(p, psize)
			s.push(f, i)
			s.qlen++
			slen += uint64(psize)
			s.bufferUsed += uint64(s.pool.e[i].mem)
			b.packets++
		}
		b.bytes += slen
		b.backlogs[idx] += uint32(slen)
		b.backlog += uint32(slen)
		s.backlog += slen
		s.avgWindowBytes += slen
	} else {
		i := s.pool.alloc()
		s.pool.e[i] = entry{pkt: pkt, next: none, size: size, mem: uint32(pkt.MemSize()), enq: now}
		s.pool.e[i].adj = s.overhead(pkt, size)
		s.push(f, i)
		ack := int32(none)
		if s.cfg.AckFilter != NoAckFilter {
			ack = s.ackFilter(f)
		}
		var ackLen uint32
		if ack != none {
			a := s.pool.e[ack]
			b.ackDrop++
			s.drops++
			ackLen = a.size
			b.bytes += uint64(ackLen)
			s.bufferUsed = s.bufferUsed + uint64(s.pool.e[i].mem) - uint64(a.mem)
			if s.cfg.Ingress {
				s.advanceShaper(b, a.adj, now, true)
			}
			a.pkt.DecRef()
			s.pool.release(ack)
		} else {
			s.qlen++
			s.bufferUsed += uint64(s.pool.e[i].mem)
		}
		b.packets++
		// What the ACK took out may be more than the packet brings:
		// the sums wrap, as Linux's, and come out right.
		d := size - ackLen
		d64 := uint64(int64(size) - int64(ackLen))
		b.bytes += d64
		b.backlogs[idx] += d
		b.backlog += d
		s.backlog += d64
		s.avgWindowBytes += d64
	}

	if s.overflowTimeout != 0 {
		s.heapifyUp(b.overflowIdx[idx])
	}

	if s.cfg.Autorate {
		s.estimate(now)
	} else {
		s.avgWindowBytes = 0
		s.lastPacketTime = now
	}

	switch f.set {
	case setNone, setDecaying:
		if f.set == setNone {
			b.pushTail(listNew, idx)
		} else {
			b.decaying--
			b.move(listNew, idx)
		}
		f.set = setSparse
		b.sparse++
		f.deficit = s.flowQuantum(b, f)
	case setSparseWait:
		f.set = setBulk
		b.sparse--
		b.bulk++
		s.incBulk(b, f)
	}

	s.bufferMaxUsed = max(s.bufferMaxUsed, s.bufferUsed)
	if s.bufferUsed <= s.bufferLimit {
		return true
	}
	before := s.qlen
	for s.bufferUsed > s.bufferLimit && s.qlen > 0 {
		s.drop(now)
	}
	b.dropOverlimit += uint32(before - s.qlen)
	return true
}

// estimate is autorate-ingress's capacity estimate (in cake_enqueue): the
// peak rate packets arrive at, which becomes the shaper's rate (15/16 of
// it) at most every 250ms.
func (s *Sched) estimate(now int64) {
	interval := uint64(max(now-s.lastPacketTime, 0))
	interval = min(interval, 1e9)
	shift := uint(8)
	if interval > s.avgPacketInterval {
		shift = 2
	}
	s.avgPacketInterval = ewma(s.avgPacketInterval, interval, shift)
	s.lastPacketTime = now
	if interval <= s.avgPacketInterval {
		return
	}
	window := uint64(max(now-s.avgWindowBegin, 0))
	var bw uint64
	if window != 0 {
		bw = s.avgWindowBytes * 1e9 / window
	}
	shift = 8
	if bw > s.avgPeakBandwidth {
		shift = 2
	}
	s.avgPeakBandwidth = ewma(s.avgPeakBandwidth, bw, shift)
	s.avgWindowBytes = 0
	s.avgWindowBegin = now
	if now > s.lastReconfig+250e6 {
		s.rateBps = s.avgPeakBandwidth * 15 >> 4
		s.reconfigure()
		// Linux leaves last_reconfig_time at cake_init's.
	}
}

// push queues entry i at f's tail.
func (s *Sched) push(f *flow, i int32) {
	if f.head == none {
		f.head = i
	} else {
		s.pool.e[f.tail].next = i
	}
	f.tail = i
}

// pop takes the entry at f's head, or none.
func (s *Sched) pop(f *flow) int32 {
	i := f.head
	if i == none {
		return none
	}
	f.head = s.pool.e[i].next
	if f.head == none {
		f.tail = none
	}
	s.pool.e[i].next = none
	return i
}

// advanceShaper is cake_advance_shaper: it charges a packet of adj bytes
// to tin b's clock and the global one (and, for a packet sent, the
// failsafe clock, at 1.5 times the rate).
func (s *Sched) advanceShaper(b *tin, adj uint32, now int64, drop bool) {
	if s.rateNS == 0 {
		return
	}
	tinDur := int64(uint64(adj) * b.rateNS >> b.rateShift)
	globalDur := int64(uint64(adj) * s.rateNS >> s.rateShift)
	failsafeDur := globalDur + globalDur>>1
	if b.timeNext < now {
		b.timeNext += tinDur
	} else if b.timeNext < now+tinDur {
		b.timeNext = now + tinDur
	}
	s.timeNext += globalDur
	if !drop {
		s.failsafeNext += failsafeDur
	}
}

// drop is cake_drop: it drops the packet at the head of the flow with the
// largest backlog of any tin (the overflow heap's top), and tells its
// COBALT the queue is full.
//
// Where this differs from Linux: Linux's cake_heapify, after a swap, goes
// on comparing the children with the backlog that moved up rather than
// the one sifted down, so its heap goes wrong: its top may be a flow that
// is not the fattest (Linux then drops from it), or an empty one (Linux
// then rebuilds the whole heap, 8192 flows, and drops from the new top).
// Under a flood from many hosts that is a rebuild every few packets
// (BenchmarkSpoofedFlood: 25 times the cost per packet). Here heapify
// keeps a true max-heap, so the drop is always from a fattest flow, as
// cake means it, and costs O(log flows); when Linux's heap is right, the
// two drop from the same flow. The rebuild on an empty top is kept, for
// the heap's first use.
func (s *Sched) drop(now int64) {
	if s.overflowTimeout == 0 {
		s.rebuildHeap()
	}
	s.overflowTimeout = 65535
	top := s.heap[0]
	b := &s.tins[top.tin]
	fi := int(top.flow)
	f := &b.flows[fi]
	if f.head == none {
		// Linux: "heap has gone wrong, rebuild it next time", and
		// cake_enqueue's loop calls cake_drop again at once.
		s.rebuildHeap()
		top = s.heap[0]
		b = &s.tins[top.tin]
		fi = int(top.flow)
		f = &b.flows[fi]
		if f.head == none {
			// Every backlog is 0: the packets queued are all of length
			// 0, which Linux never queues (it would spin here). Drop
			// from any flow that holds packets.
			var ok bool
			if b, fi, ok = s.anyPacket(); !ok {
				return
			}
			f = &b.flows[fi]
		}
	}
	i := s.pop(f)
	e := s.pool.e[i]
	if f.cv.queueFull(&b.cp, now) {
		b.unresponsive++
	}
	s.bufferUsed -= uint64(e.mem)
	b.backlogs[fi] -= e.size
	b.backlog -= e.size
	s.backlog -= uint64(e.size)
	f.dropped++
	b.dropped++
	s.drops++
	if s.cfg.Ingress {
		s.advanceShaper(b, e.adj, now, true)
	}
	e.pkt.DecRef()
	s.pool.release(i)
	s.qlen--
	s.heapify(0)
}

// rebuildHeap builds the overflow heap afresh (cake_drop's "fresh
// max-heap").
func (s *Sched) rebuildHeap() {
	for i := len(s.heap)/2 - 1; i >= 0; i-- {
		s.heapify(uint16(i))
	}
}

// anyPacket finds a flow that holds a packet.
func (s *Sched) anyPacket() (*tin, int, bool) {
	for t := range s.tins {
		b := &s.tins[t]
		for i := range b.flows {
			if b.flows[i].head != none {
				return b, i, true
			}
		}
	}
	return nil, 0, false
}

// dequeueOne is cake_dequeue_one: the head of the current flow.
func (s *Sched) dequeueOne() (int32, bool) {
	b := &s.tins[s.curTin]
	f := &b.flows[s.curFlow]
	i := s.pop(f)
	if i == none {
		return none, false
	}
	e := &s.pool.e[i]
	b.backlogs[s.curFlow] -= e.size
	b.backlog -= e.size
	s.backlog -= uint64(e.size)
	s.bufferUsed -= uint64(e.mem)
	s.qlen--
	if s.overflowTimeout != 0 {
		s.heapify(b.overflowIdx[s.curFlow])
	}
	return i, true
}

// Dequeue implements qdisc.Queue.Dequeue: cake_dequeue at now. It hands
// over nothing while the shaper is ahead of now (NextEvent says until
// when), and drops what COBALT drops on the way.
func (s *Sched) Dequeue(now int64) (*stack.PacketBuffer, uint32, bool) {
	if s.hasPeeked {
		s.hasPeeked = false
		e := s.pool.e[s.peeked]
		s.pool.release(s.peeked)
		s.peeked = none
		s.qlen--
		s.backlog -= uint64(e.size)
		return e.pkt, e.size, true
	}
	i, ok := s.dequeue(now)
	if !ok {
		return nil, 0, false
	}
	e := s.pool.e[i]
	s.pool.release(i)
	return e.pkt, e.size, true
}

// dequeue is cake_dequeue, returning the entry (still allocated).
func (s *Sched) dequeue(now int64) (int32, bool) {
	firstFlow := true
	for {
		// begin:
		if s.qlen == 0 {
			return none, false
		}
		if s.timeNext > now && s.failsafeNext > now {
			s.overlimits++
			return none, false
		}
		var b *tin
		if s.rateNS == 0 {
			// Unlimited: balance the tins by DRR.
			wrapped, empty := false, true
			b = &s.tins[s.curTin]
			for b.deficit < 0 || b.sparse+b.bulk == 0 {
				if b.deficit <= 0 {
					b.deficit += int32(b.quantum)
				}
				if b.sparse+b.bulk != 0 {
					empty = false
				}
				s.curTin++
				if s.curTin >= s.tinCnt {
					s.curTin = 0
					if wrapped {
						if empty {
							return none, false
						}
					} else {
						wrapped = true
					}
				}
				b = &s.tins[s.curTin]
			}
		} else {
			// Shaped: the highest-priority tin that is due, or else
			// the one due first.
			best, bestTin := int64(1<<63-1), 0
			for t := range s.tinCnt {
				tb := &s.tins[t]
				if tb.sparse+tb.bulk > 0 {
					d := tb.timeNext - now
					if d <= 0 || d <= best {
						best, bestTin = d, t
					}
				}
			}
			s.curTin = bestTin
			b = &s.tins[bestTin]
			if b.sparse+b.bulk == 0 {
				return none, false
			}
		}
		i, ok, again := s.serveTin(b, now, &firstFlow)
		if again {
			continue
		}
		return i, ok
	}
}

// serveTin serves tin b by DRR++ (the rest of cake_dequeue, from retry):
// it returns the packet sent, or again to start over (a flow turned out
// empty).
func (s *Sched) serveTin(b *tin, now int64, firstFlow *bool) (int32, bool, bool) {
	for {
		// retry:
		l := listDecaying
		if !*firstFlow || b.lists[listDecaying].head == none {
			l = listNew
			if b.lists[listNew].head == none {
				l = listOld
				if b.lists[listOld].head == none {
					l = listDecaying
					if b.lists[listDecaying].head == none {
						return none, false, true
					}
				}
			}
		}
		fi := int(b.lists[l].head)
		f := &b.flows[fi]
		s.curFlow = fi
		*firstFlow = false

		if f.deficit <= 0 {
			if f.set == setSparse {
				if f.head != none {
					b.sparse--
					b.bulk++
					s.incBulk(b, f)
					f.set = setBulk
				} else {
					f.set = setSparseWait
				}
			}
			f.deficit += s.flowQuantum(b, f)
			b.move(listOld, fi)
			continue
		}

		for {
			i, ok := s.dequeueOne()
			if !ok {
				if f.cv.queueEmpty(&b.cp, now) {
					b.unresponsive--
				}
				if f.cv.pDrop != 0 || f.cv.count != 0 || now < f.cv.dropNext {
					b.move(listDecaying, fi)
					switch f.set {
					case setBulk:
						b.bulk--
						s.decBulk(b, f)
						b.decaying++
					case setSparse, setSparseWait:
						b.sparse--
						b.decaying++
					}
					f.set = setDecaying
				} else {
					b.remove(fi)
					switch f.set {
					case setSparse, setSparseWait:
						b.sparse--
					case setBulk:
						b.bulk--
						s.decBulk(b, f)
					default:
						b.decaying--
					}
					f.set = setNone
				}
				return none, false, true
			}
			e := &s.pool.e[i]
			bulk := uint32(0)
			if s.cfg.Ingress {
				bulk = uint32(b.bulk)
			}
			if !f.cv.shouldDrop(&b.cp, now, e.enq, bulk, e.pkt, &s.rnd) || f.head == none {
				b.ecnMark += boolInt(f.cv.ecnMarked)
				delay := uint64(max(now-e.enq, 0))
				b.avgDelay = ewma(b.avgDelay, delay, 8)
				b.peakDelay = ewma(b.peakDelay, delay, ewmaShift(delay > b.peakDelay))
				b.baseDelay = ewma(b.baseDelay, delay, ewmaShift(delay < b.baseDelay))
				s.advanceShaper(b, e.adj, now, false)
				f.deficit -= int32(e.adj)
				b.deficit -= int32(e.adj)
				if s.overflowTimeout != 0 {
					s.overflowTimeout--
				}
				return i, true, false
			}
			// COBALT drops it; take another.
			if s.cfg.Ingress {
				s.advanceShaper(b, e.adj, now, true)
				f.deficit -= int32(e.adj)
				b.deficit -= int32(e.adj)
			}
			f.dropped++
			b.dropped++
			s.drops++
			e.pkt.DecRef()
			s.pool.release(i)
			if s.cfg.Ingress {
				break // retry: the flow's deficit changed
			}
		}
	}
}

func boolInt(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// ewmaShift is the delay averages' weight: fast (1/4) towards the
// extreme they track, slow (1/256) away from it.
func ewmaShift(fast bool) uint {
	if fast {
		return 2
	}
	return 8
}

// NextEvent implements qdisc.Shaper.NextEvent: the time Linux arms its
// watchdog for, when the shaper is ahead.
func (s *Sched) NextEvent() int64 { return min(s.timeNext, s.failsafeNext) }

// Activated implements qdisc.Shaper.Activated: a packet queued into an
// empty cake may leave at once (or when the shaper, idle, comes due).
func (s *Sched) Activated() bool { return s.activated }

// Peek implements qdisc.Queue.Peek: cake decides at now which packet
// leaves next (COBALT may drop others on the way) and keeps it, counted,
// for the next Dequeue.
func (s *Sched) Peek(now int64, sizes []uint32, arrived []int64) int {
	if len(sizes) == 0 {
		return 0
	}
	if !s.hasPeeked {
		i, ok := s.dequeue(now)
		if !ok {
			return 0
		}
		s.peeked, s.hasPeeked = i, true
		s.qlen++
		s.backlog += uint64(s.pool.e[i].size)
	}
	e := &s.pool.e[s.peeked]
	sizes[0], arrived[0] = e.size, e.enq
	return 1
}

// Len implements qdisc.Queue.Len.
func (s *Sched) Len() (int, uint64) { return s.qlen, s.backlog }

// Drops implements qdisc.Queue.Drops: COBALT's, the ACK filter's, the
// memory limit's, and GSO packets split-gso could not cut.
func (s *Sched) Drops() uint64 { return s.drops }

// Overlimits returns the times cake found its shaper ahead with packets
// waiting.
func (s *Sched) Overlimits() uint64 { return s.overlimits }

// Purge implements qdisc.Queue.Purge: every queued packet is released and
// every flow is emptied of its state, as cake_reset; the counters stay.
func (s *Sched) Purge() (int, uint64) {
	n, bytes := s.qlen, s.backlog
	s.purged += uint64(n)
	if s.hasPeeked {
		s.pool.e[s.peeked].pkt.DecRef()
		s.pool.release(s.peeked)
		s.hasPeeked, s.peeked = false, none
	}
	for t := range s.tins {
		b := &s.tins[t]
		for j := range b.flows {
			f := &b.flows[j]
			for i := s.pop(f); i != none; i = s.pop(f) {
				s.pool.e[i].pkt.DecRef()
				s.pool.release(i)
			}
			*f = flow{head: none, tail: none, prev: none, next: none, dropped: f.dropped}
			b.backlogs[j] = 0
			b.hosts[j].srcBulk, b.hosts[j].dstBulk = 0, 0
		}
		for l := range b.lists {
			b.lists[l] = flowList{none, none}
		}
		b.sparse, b.bulk, b.decaying, b.unresponsive, b.backlog = 0, 0, 0, 0, 0
	}
	s.qlen, s.backlog, s.bufferUsed = 0, 0, 0
	return n, bytes
}
