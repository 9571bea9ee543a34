package netem

import "github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"

// SetCeiling puts gate, a ceiling's buckets (tbf.NewGate), over netem's
// lane, or lifts it with nil: a packet leaves when netem lets it go and
// the gate books it, as from Linux's netem with a tbf grafted under it
// (the netem seed's "netem delay + tbf child"). maxPacketBytes is the
// largest packet the gate passes.
func (d *Discipline) SetCeiling(gate dispatch.Gate, maxPacketBytes uint32) {
	d.lanes.SetGate(gate, maxPacketBytes)
}
