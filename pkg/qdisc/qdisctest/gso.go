package qdisctest

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// GSOHeaderLen is the bytes of headers GSOPacket pushes before the TCP
// payload: Ethernet, IPv4 without options, and TCP with the 12 bytes of
// timestamp options gVisor sends.
const GSOHeaderLen = header.EthernetMinimumSize + header.IPv4MinimumSize + header.TCPMinimumSize + 12

// GSOPacket returns a host-GSO TCP/IPv4 packet as gVisor's TCP and an
// Ethernet link hand it to a qdisc: headers pushed (link, network,
// transport), payload bytes of data made as MakePacket makes them for seq,
// and GSOOptions asking the host to cut it into mss-byte segments with a
// partial checksum. Its sequence number is tcpSeq. The caller owns the one
// reference.
func GSOPacket(payload, mss int, hash uint32, seq uint64, tcpSeq uint32) *stack.PacketBuffer {
	data := MakePacket(payload, hash, seq)
	defer data.DecRef()
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: GSOHeaderLen,
		Payload:            data.Data().ToBuffer(),
	})
	pkt.Hash = hash
	src, dst := tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	tcpLen := header.TCPMinimumSize + 12
	tcp := header.TCP(pkt.TransportHeader().Push(tcpLen))
	tcp.Encode(&header.TCPFields{SrcPort: 4000, DstPort: 5001, SeqNum: tcpSeq, AckNum: 1, DataOffset: uint8(tcpLen), Flags: header.TCPFlagAck | header.TCPFlagPsh, WindowSize: 4096})
	opts := tcp[header.TCPMinimumSize:]
	opts[0], opts[1], opts[2], opts[3] = header.TCPOptionNOP, header.TCPOptionNOP, header.TCPOptionTS, header.TCPOptionTSLength
	tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(tcpLen+payload)))
	pkt.TransportProtocolNumber = header.TCPProtocolNumber
	ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(min(header.IPv4MinimumSize+tcpLen+payload, 0xffff)), ID: uint16(seq), TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	eth := header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize))
	eth.Encode(&header.EthernetFields{SrcAddr: "\x02\x00\x00\x00\x00\x01", DstAddr: "\x02\x00\x00\x00\x00\x02", Type: header.IPv4ProtocolNumber})
	pkt.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, NeedsCsum: true, CsumOffset: 16, MSS: uint16(mss), L3HdrLen: header.IPv4MinimumSize, MaxSize: 65536}
	return pkt
}

// GSOPayload returns the TCP payload of a packet GSOPacket made, or of a
// piece of one, and its TCP sequence number.
func GSOPayload(pkt *stack.PacketBuffer) ([]byte, uint32) {
	return pkt.Data().AsRange().ToSlice(), header.TCP(pkt.TransportHeader().Slice()).SequenceNumber()
}
