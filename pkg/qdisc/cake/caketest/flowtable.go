package caketest

// What cake keeps per tin: its flows, host slots and flowchain lists,
// the hosts' bulk flow counts, and the flow quantum they divide.

import "math"

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

// quantumDiv is cake_init's quantum_div: 65535/i, the reciprocal of a
// host's bulk flow count that divides the flow quantum.
var quantumDiv = func() (q [numQueues + 1]uint16) {
	q[0] = math.MaxUint16
	for i := 1; i <= numQueues; i++ {
		q[i] = uint16(65535 / i)
	}
	return q
}()

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
