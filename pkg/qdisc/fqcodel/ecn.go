package fqcodel

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/ecn"
)

// markCE is Linux's INET_ECN_set_ce (ecn.MarkCE): packets arriving from
// outside may be ECT; gVisor's own TCP does not set ECN. A packet that
// is not ECN-capable, or not whole, is not marked, and CoDel drops it.
func markCE(pkt *stack.PacketBuffer) bool { return ecn.MarkCE(pkt) }

// dsField is Linux's skb_get_dsfield (ecn.DSField).
func dsField(pkt *stack.PacketBuffer) (uint8, bool) { return ecn.DSField(pkt) }
