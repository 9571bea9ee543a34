package cake

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
)

// Flow isolation: the set-associative hash of flows to a tin's queues,
// and the host table that counts each host's bulk flows (cake_hash).

// Isolation's bits (CAKE_FLOW_*): a mode is a set of them.
const (
	flowSrcIP = 1
	flowDstIP = 2
	flowHosts = 3
	flowFlows = 4
	flowDual  = 5 // dual-srchost's bits
	flowDDst  = 6 // dual-dsthost's bits
)

// dualSrc and dualDst report whether a mode shares flows' quanta among
// the bulk flows of their source (dual-srchost, triple-isolate) or
// destination host (dual-dsthost, triple-isolate).
func dualSrc(m Isolation) bool { return uint8(m)&flowDual == flowDual }
func dualDst(m Isolation) bool { return uint8(m)&flowDDst == flowDDst }

// hash is cake_hash: the queue of tin b that pkt goes in. The flow's hash
// is pkt.Hash where the stack set one (Linux's skb->hash of a socket's
// packets), else one of its addresses, protocol and ports; hosts are
// hashed from their addresses. The queue is found among the eight ways
// of the hash's set: the way already tagged with the flow, else an empty
// one, else the flow's own way, shared (a collision). nh is pkt's network
// header, if the send path parsed it. A flow new to its
// way in the dual and triple modes is given its hosts' slots in the host
// table, found the same way.
func (s *Sched) hash(b *tin, pkt *stack.PacketBuffer, nh []byte) int {
	mode := uint8(s.cfg.Isolation)
	if mode == 0 {
		return 0
	}
	var hs flowhash.Hashes
	switch {
	case mode&flowHosts != 0 && pkt.Hash != 0:
		hs.Flow = pkt.Hash
		if flowhash.HasAddresses(pkt.NetworkProtocolNumber, nh) {
			hs.Src, hs.Dst = s.hasher.HostPairBytes(pkt.NetworkProtocolNumber, nh)
		} else {
			hs.Src, hs.Dst = s.hasher.HostPair(pkt.NetworkProtocolNumber, pkt)
		}
	case mode&flowHosts != 0:
		hs = s.hasher.Hosts(pkt.NetworkProtocolNumber, pkt)
	case pkt.Hash != 0:
		hs.Flow = pkt.Hash
	default:
		hs.Flow = s.hasher.Packet(pkt.NetworkProtocolNumber, pkt)
	}
	flowHash := hs.Flow
	if mode&flowFlows == 0 {
		flowHash = 0
		if mode&flowSrcIP != 0 {
			flowHash ^= hs.Src
		}
		if mode&flowDstIP != 0 {
			flowHash ^= hs.Dst
		}
	}
	reduced := flowHash % queues
	if b.tags[reduced] == flowHash && b.flows[reduced].set != setNone {
		b.wayDirects++
		return int(reduced)
	}
	inner := reduced % ways
	outer := reduced - inner
	k := inner
	allocSrc, allocDst := false, false
	found := false
	for i := range ways {
		if b.tags[outer+k] == flowHash {
			if i != 0 {
				b.wayHits++
			}
			if b.flows[outer+k].set == setNone {
				allocSrc, allocDst = dualSrc(s.cfg.Isolation), dualDst(s.cfg.Isolation)
			}
			found = true
			break
		}
		k = (k + 1) % ways
	}
	if !found {
		for range ways {
			if b.flows[outer+k].set == setNone {
				b.wayMisses++
				found = true
				break
			}
			k = (k + 1) % ways
		}
		allocSrc, allocDst = dualSrc(s.cfg.Isolation), dualDst(s.cfg.Isolation)
		if !found {
			// Every way busy: share the flow's own, whose bulk flow
			// leaves its hosts' counts.
			b.wayCollisions++
			if f := &b.flows[outer+k]; f.set == setBulk {
				s.decBulk(b, f)
			}
		}
	}
	reduced = outer + k
	b.tags[reduced] = flowHash
	f := &b.flows[reduced]
	if allocSrc {
		f.srchost = b.hostSlot(hs.Src, true)
		if f.set == setBulk {
			s.incSrcBulk(b, f)
		}
	}
	if allocDst {
		f.dsthost = b.hostSlot(hs.Dst, false)
		if f.set == setBulk {
			s.incDstBulk(b, f)
		}
	}
	return int(reduced)
}

// hostSlot finds the host table slot for a source (src) or destination
// host's hash: the way tagged with it, else the first way with no bulk
// flow (retagged), else its own way, retagged.
func (b *tin) hostSlot(h uint32, src bool) uint16 {
	idx := h % queues
	inner := idx % ways
	outer := idx - inner
	k := inner
	for range ways {
		if (src && b.hosts[outer+k].srcTag == h) || (!src && b.hosts[outer+k].dstTag == h) {
			return uint16(outer + k)
		}
		k = (k + 1) % ways
	}
	for range ways {
		if (src && b.hosts[outer+k].srcBulk == 0) || (!src && b.hosts[outer+k].dstBulk == 0) {
			break
		}
		k = (k + 1) % ways
	}
	if src {
		b.hosts[outer+k].srcTag = h
	} else {
		b.hosts[outer+k].dstTag = h
	}
	return uint16(outer + k)
}

// incBulk and decBulk count a flow that becomes, or stops being, bulk in
// its hosts' bulk flow counts (the dual and triple modes), each at most
// the number of queues.
func (s *Sched) incBulk(b *tin, f *flow) {
	s.incSrcBulk(b, f)
	s.incDstBulk(b, f)
}

func (s *Sched) incSrcBulk(b *tin, f *flow) {
	if h := &b.hosts[f.srchost]; dualSrc(s.cfg.Isolation) && h.srcBulk < queues {
		h.srcBulk++
	}
}

func (s *Sched) incDstBulk(b *tin, f *flow) {
	if h := &b.hosts[f.dsthost]; dualDst(s.cfg.Isolation) && h.dstBulk < queues {
		h.dstBulk++
	}
}

func (s *Sched) decBulk(b *tin, f *flow) {
	if h := &b.hosts[f.srchost]; dualSrc(s.cfg.Isolation) && h.srcBulk > 0 {
		h.srcBulk--
	}
	if h := &b.hosts[f.dsthost]; dualDst(s.cfg.Isolation) && h.dstBulk > 0 {
		h.dstBulk--
	}
}
