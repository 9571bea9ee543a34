package caketest

import "testing"

// TestFlowHasher checks the default Hasher's keys: both directions of a
// connection hash alike (flow_hash_from_keys sorts addresses and ports),
// another port or protocol is another flow, the host hashes name one
// address each, and a packet without addresses has host hashes 0.
func TestFlowHasher(t *testing.T) {
	h := FlowHasher{Seed: 42}
	ab := h.Hash(ptr(pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 1000, dport: 80}.ipv4()))
	ba := h.Hash(ptr(pkt{src: "10.0.0.2", dst: "10.0.0.1", sport: 80, dport: 1000}.ipv4()))
	other := h.Hash(ptr(pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 1001, dport: 80}.ipv4()))
	udp := h.Hash(ptr(pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 1000, dport: 80, proto: ipprotoUDP}.ipv4()))
	ac := h.Hash(ptr(pkt{src: "10.0.0.1", dst: "10.0.0.3", sport: 1000, dport: 80}.ipv4()))
	if ab.Flow != ba.Flow {
		t.Errorf("the two directions hash to %#x and %#x", ab.Flow, ba.Flow)
	}
	if ab.Flow == other.Flow || ab.Flow == udp.Flow {
		t.Errorf("another port or protocol shares the flow hash %#x", ab.Flow)
	}
	if ab.SrcHost != other.SrcHost || ab.SrcHost != ac.SrcHost || ab.DstHost == ac.DstHost {
		t.Errorf("host hashes: %+v %+v %+v", ab, other, ac)
	}
	arp := h.Hash(&Packet{Proto: ProtoARP, Data: make([]byte, 28)})
	short := h.Hash(&Packet{Data: []byte{0x45, 0}})
	if arp.SrcHost != 0 || arp.DstHost != 0 || short.SrcHost != 0 || short.DstHost != 0 {
		t.Errorf("packets without addresses: %+v %+v", arp, short)
	}
	if (FlowHasher{Seed: 43}).Hash(ptr(pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 1000, dport: 80}.ipv4())).Flow == ab.Flow {
		t.Error("the seed does not change the hash")
	}
}

func ptr(p Packet) *Packet { return &p }
