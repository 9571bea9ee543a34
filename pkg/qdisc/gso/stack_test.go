package gso_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// TestGSOSplitRealTCP splits packets that gVisor's own TCP sends over an
// Ethernet link with host GSO, as the qdisc sees them, rather than packets
// built like them.
func TestGSOSplitRealTCP(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		name := "IPv4"
		if v6 {
			name = "IPv6"
		}
		t.Run(name, func(t *testing.T) {
			pkt := realGSOPacket(t, v6)
			defer pkt.DecRef()
			g := pkt.GSOOptions
			want := stack.GSOTCPv4
			if v6 {
				want = stack.GSOTCPv6
			}
			if g.Type != want || !g.NeedsCsum || g.CsumOffset != header.TCPChecksumOffset {
				t.Errorf("gVisor's GSO options %+v, want type %d, NeedsCsum, CsumOffset %d", g, want, header.TCPChecksumOffset)
			}
			// gVisor's TCP leaves the pseudo-header's sum over the
			// whole packet's TCP length in the checksum field.
			s := snapshot(pkt)
			t.Logf("gVisor's packet: %d header bytes (%d TCP), %d payload bytes, MSS %d: %d segments, %d bytes on the wire", s.hdrLen(), len(s.TCP), len(s.Payload), g.MSS, gso.Segments(pkt), s.Wire)
			if gso.Segments(pkt) < 4 {
				t.Fatalf("gVisor's packet has %d segments, want at least 4", gso.Segments(pkt))
			}
			src, dst := s.addrs()
			if got, want := header.TCP(s.TCP).Checksum(), header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(s.TCP)+len(s.Payload))); got != want {
				t.Errorf("gVisor's partial checksum %#04x, want the pseudo-header's %#04x", got, want)
			}
			for _, segs := range []int{1, 2, 3} {
				maxWire := uint64(segs*(s.hdrLen()+int(g.MSS))) + 1
				pieces, err := gso.Split(pkt, maxWire)
				if err != nil {
					t.Fatalf("Split(%d): %v", maxWire, err)
				}
				checkSplit(t, s, pkt, pieces, maxWire, true)
				for _, p := range pieces {
					p.DecRef()
				}
			}
		})
	}
	checkNoLeaks(t)
}

// realGSOPacket connects a gVisor TCP endpoint to a peer it plays itself,
// writes 64 KiB and returns the first packet that carries more than one
// MSS, with a reference the caller owns.
func realGSOPacket(t *testing.T, v6 bool) *stack.PacketBuffer {
	t.Helper()
	const nicID = 1
	proto, local, remote := header.IPv4ProtocolNumber, src4, dst4
	if v6 {
		proto, local, remote = header.IPv6ProtocolNumber, src6, dst6
	}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{arp.NewProtocol, ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	ch := channel.New(1024, 1500, srcMAC)
	ch.SupportedGSOKind = stack.HostGSOSupported
	var ep tcpip.Endpoint
	t.Cleanup(func() {
		if ep != nil {
			ep.Abort()
		}
		s.Close()
		s.Wait()
		ch.Close()
	})
	if err := s.CreateNIC(nicID, ethernet.New(ch)); err != nil {
		t.Fatalf("CreateNIC: %s", err)
	}
	if err := s.AddProtocolAddress(nicID, tcpip.ProtocolAddress{Protocol: proto, AddressWithPrefix: local.WithPrefix()}, stack.AddressProperties{}); err != nil {
		t.Fatalf("AddProtocolAddress: %s", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: nicID}, {Destination: header.IPv6EmptySubnet, NIC: nicID}})
	if err := s.AddStaticNeighbor(nicID, proto, remote, dstMAC); err != nil {
		t.Fatalf("AddStaticNeighbor: %s", err)
	}
	var wq waiter.Queue
	var terr tcpip.Error
	if ep, terr = s.NewEndpoint(tcp.ProtocolNumber, proto, &wq); terr != nil {
		t.Fatalf("NewEndpoint: %s", terr)
	}
	if terr := ep.Connect(tcpip.FullAddress{Addr: remote, Port: 80}); terr != nil {
		if _, ok := terr.(*tcpip.ErrConnectStarted); !ok {
			t.Fatalf("Connect: %s", terr)
		}
	}

	syn := readTCP(t, ch, func(th header.TCP, _ int) bool { return th.Flags().Contains(header.TCPFlagSyn) })
	synTCP := header.TCP(syn.TransportHeader().Slice())
	port, iss := synTCP.SourcePort(), synTCP.SequenceNumber()
	synOpts := header.ParseSynOptions(synTCP.Options(), false)
	syn.DecRef()

	var opts [20]byte
	n := header.EncodeMSSOption(1460, opts[:])
	n += header.EncodeNOP(opts[n:])
	n += header.EncodeWSOption(7, opts[n:])
	n += header.EncodeNOP(opts[n:])
	n += header.EncodeNOP(opts[n:])
	n += header.EncodeTSOption(1, synOpts.TSVal, opts[n:])
	synAck := inbound(v6, header.TCPFields{
		SrcPort:    80,
		DstPort:    port,
		SeqNum:     7000,
		AckNum:     iss + 1,
		DataOffset: uint8(header.TCPMinimumSize + n),
		Flags:      header.TCPFlagSyn | header.TCPFlagAck,
		WindowSize: 0xffff,
	}, opts[:n])
	ch.InjectInbound(proto, synAck)
	synAck.DecRef()
	readTCP(t, ch, func(th header.TCP, _ int) bool { return th.Flags() == header.TCPFlagAck }).DecRef()

	data := payloadBytes(64 << 10)
	var r bytes.Reader
	r.Reset(data)
	if _, terr := ep.Write(&r, tcpip.WriteOptions{}); terr != nil {
		t.Fatalf("Write: %s", terr)
	}
	return readTCP(t, ch, func(th header.TCP, payload int) bool { return payload > 1 })
}

// readTCP returns the first TCP packet the endpoint sends that match
// accepts, releasing the others.
func readTCP(t *testing.T, ch *channel.Endpoint, match func(th header.TCP, payload int) bool) *stack.PacketBuffer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		pkt := ch.ReadContext(ctx)
		if pkt == nil {
			t.Fatalf("no matching TCP packet")
		}
		th := header.TCP(pkt.TransportHeader().Slice())
		if pkt.TransportProtocolNumber == header.TCPProtocolNumber && len(th) >= header.TCPMinimumSize {
			payload := pkt.Data().Size()
			if payload > 1 && payload <= int(pkt.GSOOptions.MSS) {
				// Only a packet of more than one MSS is of use.
				payload = 1
			}
			if match(th, payload) {
				return pkt
			}
		}
		pkt.DecRef()
	}
}

// inbound returns an Ethernet frame from the peer to the endpoint holding
// a TCP segment with fields f and options opts.
func inbound(v6 bool, f header.TCPFields, opts []byte) *stack.PacketBuffer {
	tcpLen := header.TCPMinimumSize + len(opts)
	ipLen := header.IPv4MinimumSize
	proto, src, dst := header.IPv4ProtocolNumber, dst4, src4
	if v6 {
		ipLen = header.IPv6MinimumSize
		proto, src, dst = header.IPv6ProtocolNumber, dst6, src6
	}
	b := make([]byte, header.EthernetMinimumSize+ipLen+tcpLen)
	header.Ethernet(b).Encode(&header.EthernetFields{SrcAddr: dstMAC, DstAddr: srcMAC, Type: proto})
	ip := b[header.EthernetMinimumSize:]
	if v6 {
		header.IPv6(ip).Encode(&header.IPv6Fields{
			PayloadLength:     uint16(tcpLen),
			TransportProtocol: header.TCPProtocolNumber,
			HopLimit:          64,
			SrcAddr:           src,
			DstAddr:           dst,
		})
	} else {
		h := header.IPv4(ip)
		h.Encode(&header.IPv4Fields{
			TotalLength: uint16(ipLen + tcpLen),
			TTL:         64,
			Protocol:    uint8(header.TCPProtocolNumber),
			SrcAddr:     src,
			DstAddr:     dst,
		})
		h.SetChecksum(^h.CalculateChecksum())
	}
	th := header.TCP(ip[ipLen:])
	th.Encode(&f)
	copy(th[header.TCPMinimumSize:], opts)
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(tcpLen))
	th.SetChecksum(^checksum.Checksum(th, xsum))
	return stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
}
