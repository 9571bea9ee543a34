package caketest

import (
	"fmt"
	"testing"
)

// unit names a packet, or a segment of a split one.
type unit struct {
	id  uint64
	seg uint32
}

// fuzzReader hands out the fuzz input's bytes, zeros once it runs out.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

func (r *fuzzReader) u16() uint16 { return uint16(r.byte())<<8 | uint16(r.byte()) }

// fuzzParams decodes Params from 8 bytes.
func fuzzParams(r *fuzzReader) Params {
	p := DefaultParams()
	rates := []uint64{0, 125000, 1250000, 12500000, 1250000000, 100}
	p.Rate = rates[int(r.byte())%len(rates)]
	p.FlowMode = FlowMode(r.byte() % 8)
	p.TinMode = TinMode(r.byte() % 5)
	fl := r.byte()
	p.Wash = fl&1 != 0
	p.Ingress = fl&2 != 0
	p.AutorateIngress = fl&4 != 0
	p.SplitGSO = fl&8 != 0
	p.OverheadFlag = fl&16 != 0
	p.AckFilter = AckFilter(fl >> 5 % 3)
	p.ATM = ATMMode(r.byte() % 3)
	p.Overhead = int16(int8(r.byte()))
	p.MPU = uint16(r.byte())
	p.Memory = uint32(r.byte()) * 1000
	if r.byte()&1 != 0 {
		p.SetRTT(uint32(r.u16()) * 10)
	}
	return p
}

// fuzzPacket decodes a packet: one of 8 connections between 4 hosts,
// TCP (an ACK with options, or data) or UDP, a DSCP and ECN, a size, and
// sometimes GSO, over IPv4 or IPv6; or (rarely) bytes that are not a well-formed header.
func fuzzPacket(r *fuzzReader, id uint64) Packet {
	kind := r.byte()
	if kind%16 == 15 {
		n := int(r.byte()) % 64
		d := make([]byte, n)
		for i := range d {
			d[i] = r.byte()
		}
		return Packet{ID: id, Data: d, MacLen: int(r.byte()%2) * 14, Proto: []uint16{0, ProtoIPv4, ProtoIPv6, ProtoARP}[r.byte()%4]}
	}
	c := r.byte() % 8
	d := pkt{
		id:     id,
		src:    fmt.Sprintf("10.0.0.%d", 1+c%4),
		dst:    fmt.Sprintf("10.0.1.%d", 1+c/4),
		sport:  1000 + uint16(c),
		dport:  80,
		dscp:   r.byte() % 64,
		ecn:    r.byte() % 4,
		macLen: 14,
	}
	switch kind % 3 {
	case 0: // a pure ACK, with options from the input
		d.flags = fACK | r.byte()&(fECE|fCWR|fPSH)
		d.ack = uint32(r.u16())
		switch r.byte() % 4 {
		case 1:
			d.opts = optTS(uint32(r.byte()), uint32(r.byte()))
		case 2:
			a := uint32(r.u16())
			d.opts = optSACK(a, a+uint32(r.byte()))
		case 3:
			d.opts = []byte{2, 4, 5, 0xb4}
		}
	case 1: // TCP data, sometimes GSO
		d.flags = fACK
		d.payload = 1 + int(r.u16())%9000
		if r.byte()&1 != 0 && d.payload > 1448 {
			d.gsoSize = 1448
			d.gsoSegs = uint32((d.payload + 1447) / 1448)
		}
	case 2: // UDP
		d.proto = ipprotoUDP
		d.payload = int(r.u16()) % 1500
	}
	if kind&0x80 != 0 { // IPv6, with a flow label half the time
		d.src = fmt.Sprintf("2001:db8::%d", 1+c%4)
		d.dst = fmt.Sprintf("2001:db8:1::%d", 1+c/4)
		return d.ipv6(uint32(kind>>6&1) * 0x12345)
	}
	return d.ipv4()
}

// FuzzModel drives the model with random parameters, packets and times
// and checks that every packet (or split segment) taken is exactly once
// sent or dropped, or still queued; that the memory in use is the queued
// packets' truesizes and, after an enqueue, within the limit; and that
// everything queued leaves once the caller follows the watchdog.
func FuzzModel(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 7, 0, 0x18, 1, 44, 0, 0, 0, 0, 1, 0, 0, 5, 0, 0, 0, 0, 0, 2, 3, 10})
	f.Add([]byte{3, 5, 1, 0xff, 2, 0xf0, 64, 3, 1, 0x10, 0, 1, 1, 2, 3, 4, 5, 0, 0, 1, 0, 2, 2, 3, 3})
	f.Fuzz(runFuzzBody)
}

// runFuzzBody is FuzzModel's body.
func runFuzzBody(t *testing.T, data []byte) {
	{
		r := &fuzzReader{b: data}
		p := fuzzParams(r)
		m, err := New(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		queued := map[unit]uint32{} // unit -> truesize
		done := map[unit]bool{}
		now := int64(1e9)
		var id uint64

		settle := func(what string, pk *Packet, ev []Event) {
			for _, e := range ev {
				switch e.Kind {
				case MarkCE, Refused, DropGSO:
					continue
				}
				u := unit{e.ID, e.Seg}
				if _, ok := queued[u]; !ok || done[u] {
					t.Fatalf("%s: event %+v for a packet not queued", what, e)
				}
				delete(queued, u)
				done[u] = true
			}
			if pk != nil {
				u := unit{pk.ID, pk.Seg}
				if _, ok := queued[u]; !ok || done[u] {
					t.Fatalf("%s: packet %v sent but not queued", what, u)
				}
				delete(queued, u)
				done[u] = true
			}
			if m.Queued() != len(queued) {
				t.Fatalf("%s: model holds %d, want %d", what, m.Queued(), len(queued))
			}
			var mem uint32
			for _, ts := range queued {
				mem += ts
			}
			if s := m.Stats(); s.MemoryNow != mem {
				t.Fatalf("%s: memory in use %d, queued truesizes %d", what, s.MemoryNow, mem)
			}
		}

		for ops := 0; len(r.b) > 0 && ops < 300; ops++ {
			switch op := r.byte(); op % 4 {
			case 0, 1:
				id++
				in := fuzzPacket(r, id)
				var units []Packet
				if refuse(&in) == "" {
					if in.isGSO() && p.SplitGSO {
						units, _ = splitGSO(&in)
					} else {
						units = []Packet{in}
					}
				}
				for _, u := range units {
					queued[unit{u.ID, u.Seg}] = u.trueSize()
				}
				ev := m.Enqueue(now, in)
				settle("enqueue", nil, ev)
				if s := m.Stats(); s.MemoryNow > s.MemoryLimit {
					t.Fatalf("memory %d over the limit %d after an enqueue", s.MemoryNow, s.MemoryLimit)
				}
			case 2:
				for {
					pk, ev := m.Dequeue(now)
					settle("dequeue", pk, ev)
					if pk == nil {
						break
					}
				}
			case 3:
				now += int64(r.byte()) * 100000
				if w := m.NextTime(); w >= 0 && w <= now {
					for {
						pk, ev := m.Dequeue(now)
						settle("watchdog", pk, ev)
						if pk == nil {
							break
						}
					}
				}
			}
		}

		// Drain, following the watchdog (or stepping 1 ms when it is not
		// armed, as a later arrival would).
		for i := 0; m.Queued() > 0; i++ {
			if i > 100000 {
				t.Fatalf("%d packets still queued", m.Queued())
			}
			if w := m.NextTime(); w > now {
				now = w
			} else if w < 0 {
				now += 1e6
			}
			for {
				pk, ev := m.Dequeue(now)
				settle("drain", pk, ev)
				if pk == nil {
					break
				}
			}
		}
		if len(queued) != 0 {
			t.Fatalf("%d packets unaccounted for", len(queued))
		}
	}
}
