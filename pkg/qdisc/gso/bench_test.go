package gso_test

import (
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// BenchmarkGSOSplit splits a 64 KiB host-GSO packet (MSS 1448 or 1428,
// timestamps) into pieces for a 16 KiB bucket, and releases them.
func BenchmarkGSOSplit(b *testing.B) {
	for _, bc := range []struct {
		name string
		s    spec
	}{
		{"IPv4", spec{payload: 0xffff - 52, mss: 1448, tcpOpts: 12}},
		{"IPv6/16 views", spec{v6: true, payload: 0xffff - 32, mss: 1428, tcpOpts: 12, views: 16}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const maxWire = 16 << 10
			pkt := build(bc.s)
			defer pkt.DecRef()
			pieces, err := gso.Split(pkt, maxWire)
			if err != nil {
				b.Fatalf("Split: %v", err)
			}
			n := len(pieces)
			for _, p := range pieces {
				p.DecRef()
			}
			b.SetBytes(int64(pkt.Size()))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pieces, err := gso.Split(pkt, maxWire)
				if err != nil {
					b.Fatalf("Split: %v", err)
				}
				for _, p := range pieces {
					p.DecRef()
				}
			}
			b.ReportMetric(float64(n), "pieces/op")
		})
	}
}

func BenchmarkGSOWireSize(b *testing.B) {
	pkt := build(spec{payload: 0xffff - 52, mss: 1448, tcpOpts: 12})
	defer pkt.DecRef()
	b.ReportAllocs()
	var n uint64
	for i := 0; i < b.N; i++ {
		n += gso.WireSize(pkt)
	}
	sink += n
}

// BenchmarkGSOReceivedWireSize charges a received 64 KiB GRO aggregate
// (IPv4 or IPv6, timestamps) as its segments.
func BenchmarkGSOReceivedWireSize(b *testing.B) {
	for _, bc := range []struct {
		name string
		s    spec
	}{
		{"IPv4", spec{payload: 45 * 1448, mss: 1448, tcpOpts: 12}},
		{"IPv6", spec{v6: true, payload: 45 * 1428, mss: 1428, tcpOpts: 12}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			link, network, proto := rxBytes(bc.s)
			pkt := rxPacket(link, network, proto)
			defer pkt.DecRef()
			b.ReportAllocs()
			var n uint64
			for i := 0; i < b.N; i++ {
				n += gso.ReceivedWireSize(pkt, 1500)
			}
			sink += n
		})
	}
}
