package ingress

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Deliver is DeliverNetworkPacket with the shaper's answer.
func (e *Endpoint) Deliver(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) tcpip.Error {
	return e.deliver(protocol, pkt)
}

// IsControl is isControl, for the classifier's fuzz target.
var IsControl = isControl
