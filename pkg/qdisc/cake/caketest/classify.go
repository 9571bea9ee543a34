package caketest

// Classification: a packet's tin by its DSCP, and its flow's queue
// (and hosts) by cake_hash's set-associative lookup.

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
