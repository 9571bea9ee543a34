package cake

// Sched, cake's queue: its state, its construction and
// reconfiguration, its counters, and Purge.

import (
	"math/rand/v2"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
)

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

	// tables are nil until the first packet (allocTables); heap is
	// theirs.
	*tables
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
	}
	s.rateBps = cfg.Bandwidth
	s.reconfigure()
	s.avgPeakBandwidth = s.rateBps
	s.minNetlen, s.minAdjlen = ^uint32(0), ^uint32(0)
	s.timeNext, s.failsafeNext = now, now
	// autorate-ingress's times stay 0, as cake_init's (doc.go).
	return s, nil
}

// allocTables gives s its tins' flow tables and the overflow heap, at its
// first packet: every flow empty, the heap in Linux's initial order.
func (s *Sched) allocTables() {
	s.tables = new(tables)
	for i := range s.tins {
		b := &s.tins[i]
		b.flowTable = &s.flowTables[i]
		for j := range b.flows {
			f := &b.flows[j]
			f.head, f.tail, f.prev, f.next = none, none, none, none
			k := j*maxTins + i
			s.heap[k] = heapEntry{tin: uint8(i), flow: uint16(j)}
			b.overflowIdx[j] = uint16(k)
		}
	}
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
		if b.flowTable == nil {
			continue
		}
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
