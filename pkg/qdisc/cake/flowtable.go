package cake

// The flow table: a tin's flow queues, host slots and flow lists, and
// the pool of queued packets the flows thread.

import "gvisor.dev/gvisor/pkg/tcpip/stack"

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

// flowTable is a tin's flows and what cake keeps of each flow's tag,
// backlog, place in the overflow heap and hosts: nearly all of a cake's
// memory (about 90 KiB a tin).
type flowTable struct {
	flows       [queues]flow
	backlogs    [queues]uint32
	tags        [queues]uint32
	overflowIdx [queues]uint16
	hosts       [queues]host
}

// tables are every tin's flow table and the overflow heap over their
// flows, allocated together at a cake's first packet: an idle cake (a
// sandbox's NIC that never sends) holds none of them, where Linux's
// cake_init allocates them all.
type tables struct {
	flowTables [maxTins]flowTable
	heap       [maxTins * queues]heapEntry
}

// tin is one of cake's priority tins (struct cake_tin_data).
type tin struct {
	// flowTable is nil until the cake's first packet (allocTables).
	*flowTable
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

// Flow lists: a tin's new, old and decaying rotations.

// pushTail appends flow i (in no list) to list l.
func (b *tin) pushTail(l uint8, i int) {
	f := &b.flows[i]
	lst := &b.lists[l]
	f.list, f.next, f.prev = l, none, lst.tail
	if lst.tail == none {
		lst.head = int16(i)
	} else {
		b.flows[lst.tail].next = int16(i)
	}
	lst.tail = int16(i)
}

// remove takes flow i out of its list.
func (b *tin) remove(i int) {
	f := &b.flows[i]
	if f.list == listNone {
		return
	}
	lst := &b.lists[f.list]
	if f.prev == none {
		lst.head = f.next
	} else {
		b.flows[f.prev].next = f.next
	}
	if f.next == none {
		lst.tail = f.prev
	} else {
		b.flows[f.next].prev = f.prev
	}
	f.list, f.prev, f.next = listNone, none, none
}

// move moves flow i to the tail of list l.
func (b *tin) move(l uint8, i int) {
	b.remove(i)
	b.pushTail(l, i)
}
