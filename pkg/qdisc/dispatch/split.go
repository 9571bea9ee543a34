package dispatch

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// enqueueSplit queues pkt, a host-GSO packet larger than maxPacket (the
// lane's MaxPacketBytes), as pieces that each fit (gso.Split), as Linux's
// tbf_segment does for a GSO packet larger than the bucket: the pieces are
// queued one by one, each refused piece counts a drop, and pkt is accepted
// if any piece was. A bucket smaller than a GSO packet thus works with host
// GSO on, and the wire carries the same segments, each charged with its
// headers. A packet Split cannot cut (its headers are missing or lie) is
// refused as too long, as before.
func (l *Lane) enqueueSplit(pkt *stack.PacketBuffer, maxPacket uint64) tcpip.Error {
	pieces, err := gso.Split(pkt, maxPacket)
	if err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed {
			return &tcpip.ErrClosedForSend{}
		}
		l.refused++ // too long, counted
		return &tcpip.ErrMessageTooLong{}
	}
	var first tcpip.Error
	queued := 0
	for _, p := range pieces {
		if err := l.Enqueue(p); err != nil {
			if first == nil {
				first = err
			}
		} else {
			queued++
		}
		p.DecRef() // Enqueue took its own reference
	}
	if queued > 0 {
		return nil
	}
	return first
}
