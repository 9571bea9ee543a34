package caketest

// Model, the reference cake: its state, New, and the watchdog it keeps.

import "math"

// heapEntry is struct cake_heap_entry: a queue of the overflow heap.
type heapEntry struct {
	t uint8
	b uint16
}

// Model is Linux's sch_cake for one set of Params. It is not safe for
// concurrent use: like the qdisc under its lock, one caller drives it.
type Model struct {
	p Params

	tins            [maxTins]*tin
	overflowHeap    [heapSize]heapEntry
	overflowTimeout uint16
	tinCnt          int
	tinIndex        *[64]uint8
	tinOrder        []uint8

	rateShft           uint16
	timeNextPacket     int64
	failsafeNextPacket int64
	rateNS             uint64
	rateBps            uint64

	bufferUsed, bufferMaxUsed, bufferLimit uint32

	curTin  int
	curFlow int

	lastPacketTime    int64
	avgWindowBegin    int64
	avgPacketInterval uint64
	avgWindowBytes    uint64
	avgPeakBandwidth  uint64
	lastReconfigTime  int64

	avgNetoff                                  uint32
	maxNetlen, maxAdjlen, minNetlen, minAdjlen uint16

	// The qdisc's own counters (sch->q.qlen, sch->qstats, sch->bstats).
	qlen              uint32
	backlog           uint32
	bytes, packets    uint64
	drops, overlimits uint64

	// watchdog is when the watchdog fires, -1 when it is not armed.
	watchdog int64
	// now is the latest time the model was called at.
	now int64
}

// New returns cake with Params p as cake_init leaves it at time now
// (which only bounds later calls: a call earlier than the latest one is
// taken at the latest one, as ktime never goes back).
func New(p Params, now int64) (*Model, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	m := &Model{p: p.withDefaults(), watchdog: -1, now: now}
	m.rateBps = m.p.Rate
	for i := range m.tins {
		b := new(tin)
		m.tins[i] = b
		for j := 0; j < numQueues; j++ {
			k := j*maxTins + i
			m.overflowHeap[k] = heapEntry{t: uint8(i), b: uint16(j)}
			b.overflowIdx[j] = uint16(k)
		}
	}
	m.reconfigure()
	m.avgPeakBandwidth = m.rateBps
	m.minNetlen = math.MaxUint16
	m.minAdjlen = math.MaxUint16
	return m, nil
}

// NextTime is when the model's watchdog fires (when the caller must call
// Dequeue), -1 if it is not armed.
func (m *Model) NextTime() int64 { return m.watchdog }

// tick takes the time of a call: never earlier than the last; a watchdog
// due by then has fired.
func (m *Model) tick(now int64) int64 {
	if now < m.now {
		now = m.now
	}
	m.now = now
	if m.watchdog >= 0 && now >= m.watchdog {
		m.watchdog = -1
	}
	return now
}

// schedule is qdisc_watchdog_schedule_ns: the timer is (re)armed for t.
func (m *Model) schedule(t int64) { m.watchdog = t }
