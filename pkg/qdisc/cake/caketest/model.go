package caketest

import (
	"fmt"
	"math"
)

// Sizes of sch_cake.c.
const (
	setWays   = 8    // CAKE_SET_WAYS
	maxTins   = 8    // CAKE_MAX_TINS
	numQueues = 1024 // CAKE_QUEUES
	heapSize  = numQueues * maxTins
)

// flowSet is the CAKE_SET_* value of a flow.
type flowSet uint8

const (
	setNone       flowSet = iota
	setSparse             // in new_flows
	setSparseWait         // counted sparse, in old_flows
	setBulk               // in old_flows
	setDecaying           // in decaying_flows
)

// listID names the flowchain list a flow is on.
type listID uint8

const (
	onNone listID = iota
	onNew
	onOld
	onDecaying
)

// entry is a queued packet with what cake keeps in its cb.
type entry struct {
	pkt         Packet
	enqueueTime int64
	adjustedLen uint32 // cake_overhead's length, what the shaper charges
	pktLen      uint32 // qdisc_pkt_len
	trueSize    uint32
}

// flow is struct cake_flow: a queue, its DRR++ deficit and COBALT state.
type flow struct {
	queue            []entry
	deficit          int32
	dropped          uint32
	cvars            cobaltVars
	srchost, dsthost uint16
	set              flowSet
	list             listID
}

// host is struct cake_host.
type host struct {
	srchostTag, dsthostTag   uint32
	srchostBulk, dsthostBulk uint16
}

// tin is struct cake_tin_data.
type tin struct {
	flows       [numQueues]flow
	backlogs    [numQueues]uint32
	tags        [numQueues]uint32
	overflowIdx [numQueues]uint16
	hosts       [numQueues]host

	flowQuantum   uint16
	cparams       cobaltParams
	dropOverlimit uint32

	bulkFlowCount, sparseFlowCount, decayingFlowCount, unresponsiveFlowCount uint16
	maxSkbLen                                                                uint32

	// The flowchain lists, as flow indices head first.
	newFlows, oldFlows, decayingFlows []uint16

	timeNextPacket int64
	rateNS         uint64
	rateBps        uint64
	rateShft       uint16
	tinQuantum     uint16
	tinDeficit     int32
	tinBacklog     uint32
	tinDropped     uint32
	tinECNMark     uint32
	packets        uint32
	bytes          uint64
	ackDrops       uint32

	avgeDelay, peakDelay, baseDelay uint64

	wayDirects, wayHits, wayMisses, wayCollisions uint32
}

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

// quantumDiv is cake_init's quantum_div: 65535/i, the reciprocal of a
// host's bulk flow count that divides the flow quantum.
var quantumDiv = func() (q [numQueues + 1]uint16) {
	q[0] = math.MaxUint16
	for i := 1; i <= numQueues; i++ {
		q[i] = uint16(65535 / i)
	}
	return q
}()

// EventKind says what an Event is.
type EventKind uint8

// The events.
const (
	// DropOverlimit is cake_drop: the memory limit was passed and the
	// head of the fattest queue (by backlog, across tins) went.
	DropOverlimit EventKind = iota + 1
	// DropAckFilter is an older ACK the ACK filter removed.
	DropAckFilter
	// DropCoDel is COBALT's CoDel dropping a packet it could not mark.
	DropCoDel
	// DropBlue is COBALT's BLUE dropping a packet at random.
	DropBlue
	// MarkCE is COBALT marking a packet Congestion Experienced (the
	// packet may still be dropped by BLUE: then DropBlue follows).
	MarkCE
	// DropGSO is a GSO packet that could not be split (skb_gso_segment
	// failed): not TCP or UDP, or no more payload than one segment.
	DropGSO
	// Refused is a Packet the model cannot take (see Enqueue).
	Refused
)

var eventNames = [...]string{"", "drop-overlimit", "drop-ack-filter", "drop-codel", "drop-blue", "mark-ce", "drop-gso", "refused"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is a drop or a mark.
type Event struct {
	Kind EventKind
	// At is the time of the call that made it.
	At int64
	// ID and Seg name the packet.
	ID  uint64
	Seg uint32
	// Tin and Queue are where it was queued (Queue is the flow's index of
	// CAKE_QUEUES); -1 for a packet never queued.
	Tin, Queue int
	// Len is its qdisc_pkt_len.
	Len uint32
	// Reason says more, for Refused.
	Reason string
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

// ---- the flowchain lists ----

func (b *tin) list(l listID) *[]uint16 {
	switch l {
	case onNew:
		return &b.newFlows
	case onOld:
		return &b.oldFlows
	case onDecaying:
		return &b.decayingFlows
	}
	return nil
}

// listDel is list_del_init of flow i's flowchain.
func (b *tin) listDel(i uint16) {
	f := &b.flows[i]
	if l := b.list(f.list); l != nil {
		for k, x := range *l {
			if x == i {
				*l = append((*l)[:k], (*l)[k+1:]...)
				break
			}
		}
	}
	f.list = onNone
}

// listMoveTail is list_move_tail (list_add_tail for a flow on no list).
func (b *tin) listMoveTail(i uint16, to listID) {
	b.listDel(i)
	l := b.list(to)
	*l = append(*l, i)
	b.flows[i].list = to
}

// ---- host bulk counts and the flow quantum ----

func (b *tin) decSrcBulk(f *flow, fm FlowMode) {
	if fm.dsrc() && b.hosts[f.srchost].srchostBulk != 0 {
		b.hosts[f.srchost].srchostBulk--
	}
}

func (b *tin) incSrcBulk(f *flow, fm FlowMode) {
	if fm.dsrc() && b.hosts[f.srchost].srchostBulk < numQueues {
		b.hosts[f.srchost].srchostBulk++
	}
}

func (b *tin) decDstBulk(f *flow, fm FlowMode) {
	if fm.ddst() && b.hosts[f.dsthost].dsthostBulk != 0 {
		b.hosts[f.dsthost].dsthostBulk--
	}
}

func (b *tin) incDstBulk(f *flow, fm FlowMode) {
	if fm.ddst() && b.hosts[f.dsthost].dsthostBulk < numQueues {
		b.hosts[f.dsthost].dsthostBulk++
	}
}

// flowQuantumFor is cake_get_flow_quantum: the tin's flow quantum divided
// by the larger bulk flow count of the flow's hosts (in the dual and
// triple modes), by multiplying with 65535/count and shifting 16, with a
// random 16-bit dither added before the shift.
func (m *Model) flowQuantumFor(b *tin, f *flow) uint16 {
	hostLoad := uint16(1)
	fm := m.p.FlowMode
	if fm.dsrc() {
		hostLoad = max(hostLoad, b.hosts[f.srchost].srchostBulk)
	}
	if fm.ddst() {
		hostLoad = max(hostLoad, b.hosts[f.dsthost].dsthostBulk)
	}
	dither := uint32(uint16(m.p.Rand()))
	return uint16((uint32(b.flowQuantum)*uint32(quantumDiv[hostLoad]) + dither) >> 16)
}

// ---- classification ----

// selectTin is cake_select_tin without the fwmark and skb->priority
// overrides: the DSCP's tin (wash clears the DSCP, but the tin is the one
// the packet came with).
func (m *Model) selectTin(p *Packet) int {
	var dscp uint8
	if m.p.Wash {
		dscp = p.getDSCP(true)
	}
	if m.p.TinMode == BestEffort {
		return 0
	}
	if !m.p.Wash {
		dscp = p.getDSCP(false)
	}
	t := int(m.tinIndex[dscp])
	if t >= m.tinCnt {
		t = 0
	}
	return t
}

// hash is cake_hash without overrides and without skb->hash: the flow's
// queue in tin b. Flow modes with the Flows bit key on the 5-tuple hash;
// srchost, dsthost and hosts on the XOR of the host hashes they name;
// flowblind puts everything in queue 0. A queue is found 8-way
// set-associatively: the hash's own slot if its tag matches a live flow
// (a direct hit), else a slot of the 8 with its tag (a way hit, counted
// when not the first), else a free one (a miss), else the hash's own slot
// taken over (a collision). In the dual and triple modes a flow that
// gets a slot is also given host slots the same way, by tag or a host
// with no bulk flows.
func (m *Model) hash(b *tin, p *Packet) uint16 {
	fm := m.p.FlowMode
	if fm == FlowNone {
		return 0
	}
	h := m.p.Hasher.Hash(p)
	var flowHash uint32
	if fm&FlowFlows != 0 {
		flowHash = h.Flow
	} else {
		if fm&FlowSrcIP != 0 {
			flowHash ^= h.SrcHost
		}
		if fm&FlowDstIP != 0 {
			flowHash ^= h.DstHost
		}
	}

	reduced := flowHash % numQueues
	if b.tags[reduced] == flowHash && b.flows[reduced].set != setNone {
		b.wayDirects++
		return uint16(reduced)
	}
	inner := reduced % setWays
	outer := reduced - inner
	allocSrc, allocDst := false, false
	k := inner
	found := false
	for i := 0; i < setWays; i, k = i+1, (k+1)%setWays {
		if b.tags[outer+k] == flowHash {
			if i != 0 {
				b.wayHits++
			}
			if b.flows[outer+k].set == setNone {
				allocSrc, allocDst = fm.dsrc(), fm.ddst()
			}
			found = true
			break
		}
	}
	if !found {
		for i := 0; i < setWays; i, k = i+1, (k+1)%setWays {
			if b.flows[outer+k].set == setNone {
				b.wayMisses++
				allocSrc, allocDst = fm.dsrc(), fm.ddst()
				found = true
				break
			}
		}
	}
	if !found {
		// No free way: take over the hash's own slot.
		b.wayCollisions++
		allocSrc, allocDst = fm.dsrc(), fm.ddst()
		if f := &b.flows[outer+k]; f.set == setBulk {
			b.decSrcBulk(f, fm)
			b.decDstBulk(f, fm)
		}
	}
	reduced = outer + k
	b.tags[reduced] = flowHash
	f := &b.flows[reduced]

	if allocSrc {
		idx := h.SrcHost % numQueues
		inner := idx % setWays
		outer := idx - inner
		k := inner
		hit := false
		for i := 0; i < setWays; i, k = i+1, (k+1)%setWays {
			if b.hosts[outer+k].srchostTag == h.SrcHost {
				hit = true
				break
			}
		}
		if !hit {
			for i := 0; i < setWays; i, k = i+1, (k+1)%setWays {
				if b.hosts[outer+k].srchostBulk == 0 {
					break
				}
			}
			b.hosts[outer+k].srchostTag = h.SrcHost
		}
		f.srchost = uint16(outer + k)
		if f.set == setBulk {
			b.incSrcBulk(f, fm)
		}
	}
	if allocDst {
		idx := h.DstHost % numQueues
		inner := idx % setWays
		outer := idx - inner
		k := inner
		hit := false
		for i := 0; i < setWays; i, k = i+1, (k+1)%setWays {
			if b.hosts[outer+k].dsthostTag == h.DstHost {
				hit = true
				break
			}
		}
		if !hit {
			for i := 0; i < setWays; i, k = i+1, (k+1)%setWays {
				if b.hosts[outer+k].dsthostBulk == 0 {
					break
				}
			}
			b.hosts[outer+k].dsthostTag = h.DstHost
		}
		f.dsthost = uint16(outer + k)
		if f.set == setBulk {
			b.incDstBulk(f, fm)
		}
	}
	return uint16(reduced)
}
