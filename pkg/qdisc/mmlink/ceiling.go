package mmlink

import "github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"

// SetCeiling puts gate, a ceiling's buckets (tbf.NewGate), over the
// link's lane, or lifts it with nil: a packet leaves when the trace's
// link lets it go and the gate books it, as from mahimahi's link with a
// tbf grafted under it. maxPacketBytes is the largest packet the gate
// passes (0: any); the lane's largest stays the link's frame where that
// is smaller, so that host-GSO packets are still cut into their
// segments.
func (d *Discipline) SetCeiling(gate dispatch.Gate, maxPacketBytes uint32) {
	if maxPacketBytes == 0 || (d.frame != 0 && d.frame < maxPacketBytes) {
		maxPacketBytes = d.frame
	}
	d.lanes.SetGate(gate, maxPacketBytes)
}
