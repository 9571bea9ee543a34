package dispatch

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// Received is the Config of a qdisc on the receive path (package
// ingress, a Kind's NewTo): what leaves goes to out, the goroutine that
// delivers from link only queues, and a packet GRO merged is charged as
// the segments it was on link (gso.ReceivedWireSize at link's MTU).
func Received(out stack.LinkWriter, link stack.LinkEndpoint) Config {
	mtu := link.MTU()
	return Config{
		Lower:     out,
		QueueOnly: true,
		Size:      func(pkt *stack.PacketBuffer) uint64 { return gso.ReceivedWireSize(pkt, mtu) },
	}
}
