package netem

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// packetBytes returns a copy of pkt's bytes, from its first header, that
// the caller owns: a PacketBuffer's views may be shared with other
// holders (Clone shares them), so netem changes only its own copy.
func packetBytes(pkt *stack.PacketBuffer) []byte {
	v := pkt.ToView()
	defer v.Release()
	return append([]byte(nil), v.AsSlice()...)
}

// rebuild returns a new packet of b, pkt's bytes as packetBytes gave them
// (and as netem changed them), laid out as pkt is: the headers pkt has
// pushed pushed, those it has consumed consumed, with the same room left
// for more, and pkt's metadata as Clone keeps it (but connection
// tracking). The new packet holds a reference to pkt until it is
// released, so that a sender told of pkt's release (TCP small queues,
// runsc patch 0006) learns of it when the copy has left or been dropped,
// as gso.Split's pieces do. The caller owns the one reference. It fails,
// taking nothing, if pkt's headers are not laid out as a PacketBuffer
// lays them out (the pushed ones first).
func rebuild(pkt *stack.PacketBuffer, b []byte) (*stack.PacketBuffer, error) {
	hdrs := [...]stack.PacketHeader{pkt.VirtioNetHeader(), pkt.LinkHeader(), pkt.NetworkHeader(), pkt.TransportHeader()}
	var lens [len(hdrs)]int
	pushed := pkt.ReservedHeaderBytes() - pkt.AvailableHeaderBytes()
	k, sum := 0, 0 // the first k headers are the pushed ones
	for i, h := range hdrs {
		lens[i] = len(h.Slice())
		if sum < pushed {
			sum += lens[i]
			k = i + 1
		}
	}
	if sum != pushed || pushed > len(b) {
		return nil, fmt.Errorf("netem corrupt: a packet whose %d pushed header bytes are not its first headers'", pushed)
	}
	pkt.IncRef()
	c := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: pkt.ReservedHeaderBytes(),
		Payload:            buffer.MakeWithData(b[pushed:]),
		IsForwardedPacket:  pkt.NetworkPacketInfo.IsForwardedPacket,
		Mark:               pkt.Mark,
		OnRelease:          pkt.DecRef,
	})
	mine := [...]stack.PacketHeader{c.VirtioNetHeader(), c.LinkHeader(), c.NetworkHeader(), c.TransportHeader()}
	for i, off := k-1, pushed; i >= 0; i-- { // pushed last first, as a stack pushes them
		off -= lens[i]
		if lens[i] > 0 {
			copy(mine[i].Push(lens[i]), b[off:off+lens[i]])
		}
	}
	for i := k; i < len(mine); i++ {
		if lens[i] == 0 {
			continue
		}
		if _, ok := mine[i].Consume(lens[i]); !ok {
			c.DecRef()
			return nil, fmt.Errorf("netem corrupt: a packet shorter than its %d-byte header", lens[i])
		}
	}
	c.NetworkProtocolNumber = pkt.NetworkProtocolNumber
	c.TransportProtocolNumber = pkt.TransportProtocolNumber
	c.Hash = pkt.Hash
	c.Owner = pkt.Owner
	c.EgressRoute = pkt.EgressRoute
	c.GSOOptions = pkt.GSOOptions
	c.PktType = pkt.PktType
	c.NICID = pkt.NICID
	c.InputNICID = pkt.InputNICID
	c.RXChecksumValidated = pkt.RXChecksumValidated
	c.NetworkPacketInfo = pkt.NetworkPacketInfo
	return c, nil
}
