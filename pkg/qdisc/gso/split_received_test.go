package gso_test

import (
	"bytes"
	"errors"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// kubeBucket is the bucket Kubernetes' bandwidth annotations get below
// 52 Mbit/s: the host-GSO maximum and an Ethernet header.
const kubeBucket = 65536 + 14

// wholeBytes returns pkt's bytes from its first header on.
func wholeBytes(pkt *stack.PacketBuffer) []byte {
	v := pkt.ToView()
	defer v.Release()
	return append([]byte(nil), v.AsSlice()...)
}

// TestReceivedAggregateOverBucket reproduces the ingress shaper's 1.04 on
// the wire with host GSO: a 64 KiB GRO aggregate of 45 segments of 1448
// bytes is 65,226 bytes, within Kubernetes' bucket of 65,550, but was
// 68,130 bytes on the wire, more than the bucket holds. Charging it the
// bucket (what the shaper did) lets 68,130/65,550 = 1.0394 of the rate
// onto the wire; SplitReceived cuts it into pieces the bucket holds whose
// charges add up to the wire's bytes.
func TestReceivedAggregateOverBucket(t *testing.T) {
	s := spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, noCsum: true}
	link, network, proto := rxBytes(s)
	pkt := rxPacket(link, network, proto)
	defer pkt.DecRef()
	wire := gso.ReceivedWireSize(pkt, 1500)
	if pkt.Size() != 65226 || wire != 68130 {
		t.Fatalf("the aggregate is %d bytes standing for %d on the wire; want 65226 and 68130", pkt.Size(), wire)
	}
	if capped := min(wire, kubeBucket); float64(wire)/float64(capped) < 1.039 {
		t.Fatalf("charged the bucket, the wire would carry %.4f of the rate; the regression is gone from this model", float64(wire)/float64(capped))
	}
	pieces, err := gso.SplitReceived(pkt, 1500, kubeBucket)
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, p := range pieces {
		w := gso.ReceivedWireSize(p, 1500)
		if w > kubeBucket {
			t.Errorf("a piece of %d bytes stands for %d on the wire, more than the bucket's %d", p.Size(), w, kubeBucket)
		}
		sum += w
		p.DecRef()
	}
	if len(pieces) != 2 || sum != wire {
		t.Errorf("%d pieces standing for %d bytes on the wire; want 2 (43 segments and 2) and %d", len(pieces), sum, wire)
	}
}

// TestSplitReceived: SplitReceived cuts a received aggregate into the
// very packets Split cuts the packet its sender's host sent into (whole
// segments of the MSS a sender on the MTU uses, each piece's lengths,
// IPv4 ID, sequence number, flags and checksums fixed), delivered as a
// link delivers them: the link header consumed, the rest in Data.
func TestSplitReceived(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       spec
		maxWire uint64
		pieces  int
	}{
		{"IPv4 64 KiB, Kubernetes' bucket", spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, id: 0xfff0, flags: header.TCPFlagPsh | header.TCPFlagCwr}, kubeBucket, 2},
		{"IPv4 remainder, FIN", spec{tcpOpts: 12, payload: 44*1448 + 700, mss: 1448, flags: header.TCPFlagFin | header.TCPFlagPsh}, kubeBucket, 2},
		{"IPv4 four pieces", spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, seq: 0xffffff00}, 20000, 4},
		{"IPv4 no options", spec{payload: 44 * 1460, mss: 1460}, kubeBucket, 2},
		{"IPv6 64 KiB", spec{v6: true, tcpOpts: 12, payload: 45 * 1428, mss: 1428}, kubeBucket, 2},
		{"IPv6 no link header", spec{v6: true, noLink: true, tcpOpts: 12, payload: 45 * 1428, mss: 1428}, 30000, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.noCsum = true // a full TCP checksum, as a receiver checks it
			for _, validated := range []bool{false, true} {
				link, network, proto := rxBytes(tc.s)
				pkt := rxPacket(link, network, proto, 100, 1000) // views cut anywhere
				pkt.RXChecksumValidated = validated
				got, err := gso.SplitReceived(pkt, 1500, tc.maxWire)
				if err != nil {
					t.Fatal(err)
				}
				sent := build(tc.s)
				want, err := gso.Split(sent, tc.maxWire)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != tc.pieces || len(want) != tc.pieces {
					t.Fatalf("%d pieces, Split cut the sent packet into %d; want %d", len(got), len(want), tc.pieces)
				}
				var sum uint64
				for i := range got {
					if g, w := wholeBytes(got[i]), wholeBytes(want[i]); !bytes.Equal(g, w) {
						t.Errorf("piece %d differs from Split's: %s", i, diffBytes(g, w))
					}
					if n := len(got[i].LinkHeader().Slice()); n != len(link) || len(got[i].NetworkHeader().Slice()) != 0 || len(got[i].TransportHeader().Slice()) != 0 {
						t.Errorf("piece %d: a %d-byte link header and its network or transport header parsed; want only the %d-byte link header consumed", i, n, len(link))
					}
					if got[i].NetworkProtocolNumber != proto || got[i].RXChecksumValidated != validated {
						t.Errorf("piece %d: protocol %#x, checksum validated %t; want %#x and %t", i, got[i].NetworkProtocolNumber, got[i].RXChecksumValidated, proto, validated)
					}
					if w := gso.ReceivedWireSize(got[i], 1500); w > tc.maxWire {
						t.Errorf("piece %d stands for %d bytes on the wire, more than %d", i, w, tc.maxWire)
					} else {
						sum += w
					}
					got[i].DecRef()
					want[i].DecRef()
				}
				if w := gso.ReceivedWireSize(pkt, 1500); sum != w {
					t.Errorf("the pieces stand for %d bytes on the wire, the aggregate for %d", sum, w)
				}
				sent.DecRef()
				pkt.DecRef()
			}
		})
	}
}

// TestSplitReceivedRefusals: what need not be cut is not, and what cannot
// be is refused with no pieces, the packet unchanged.
func TestSplitReceivedRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         spec
		validated bool
		mutate    func(network []byte)
		maxWire   uint64
		want      error
	}{
		{"fits", spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, noCsum: true}, false, nil, 68130, nil},
		{"one frame over the bound", spec{tcpOpts: 12, payload: 1448, mss: 1448, noCsum: true}, false, nil, 1000, gso.ErrTooSmall},
		{"a segment exceeds the bound", spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, noCsum: true}, true, nil, 1513, gso.ErrTooSmall},
		{"TCP checksum wrong, not validated", spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448}, false, nil, kubeBucket, gso.ErrMalformed},
		{"IPv4 checksum wrong, not validated", spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, noCsum: true}, false, func(n []byte) { n[10] ^= 1 }, kubeBucket, gso.ErrMalformed},
		{"SYN", spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448, noCsum: true, flags: header.TCPFlagSyn}, true, nil, kubeBucket, gso.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link, network, proto := rxBytes(tc.s)
			if tc.mutate != nil {
				tc.mutate(network)
			}
			pkt := rxPacket(link, network, proto)
			defer pkt.DecRef()
			pkt.RXChecksumValidated = tc.validated
			before := wholeBytes(pkt)
			pieces, err := gso.SplitReceived(pkt, 1500, tc.maxWire)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || len(pieces) != 0 {
				t.Errorf("SplitReceived = %d pieces, %v; want none and %v", len(pieces), err, tc.want)
			}
			if !bytes.Equal(wholeBytes(pkt), before) {
				t.Error("SplitReceived changed the packet")
			}
		})
	}
	if p, err := gso.SplitReceived(nil, 1500, 1); p != nil || err != nil {
		t.Errorf("SplitReceived(nil) = %v, %v; want nothing", p, err)
	}
}
