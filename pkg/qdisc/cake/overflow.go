package cake

// The overflow heap of every flow by backlog, and cake_drop, which
// drops from the fattest flow past the memory limit.

// heapEntry names a flow of a tin in the overflow heap.
type heapEntry struct {
	tin  uint8
	flow uint16
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
		if b.flowTable == nil {
			continue
		}
		for i := range b.flows {
			if b.flows[i].head != none {
				return b, i, true
			}
		}
	}
	return nil, 0, false
}

// The overflow heap: a max-heap of every flow of every tin by backlog,
// from which cake_drop takes the fattest.

func (s *Sched) heapBacklog(i int) uint32 {
	e := s.heap[i]
	return s.tins[e.tin].backlogs[e.flow]
}

func (s *Sched) heapSwap(i, j int) {
	a, c := s.heap[i], s.heap[j]
	s.heap[i], s.heap[j] = c, a
	s.tins[a.tin].overflowIdx[a.flow] = uint16(j)
	s.tins[c.tin].overflowIdx[c.flow] = uint16(i)
}

// heapify is cake_heapify: it sifts entry i down. Unlike Linux's, which
// goes on comparing the children with the backlog that moved up rather
// than the one sifted down (see drop), it keeps a true max-heap.
func (s *Sched) heapify(i16 uint16) {
	i := int(i16)
	const n = len(s.heap)
	mb := s.heapBacklog(i)
	m := i
	for m < n {
		l := 2*m + 1
		r := l + 1
		if l < n {
			if lb := s.heapBacklog(l); lb > mb {
				m, mb = l, lb
			}
		}
		if r < n {
			if rb := s.heapBacklog(r); rb > mb {
				m, mb = r, rb
			}
		}
		if m == i {
			break
		}
		s.heapSwap(i, m)
		i = m
		mb = s.heapBacklog(i)
	}
}

// heapifyUp is cake_heapify_up: it sifts entry i up.
func (s *Sched) heapifyUp(i16 uint16) {
	i := int(i16)
	for i > 0 && i < len(s.heap) {
		p := (i - 1) >> 1
		if s.heapBacklog(i) <= s.heapBacklog(p) {
			break
		}
		s.heapSwap(i, p)
		i = p
	}
}
