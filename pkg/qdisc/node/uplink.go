package node

import (
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
)

// UplinkBurst is a class's bucket depth: one host-GSO packet with its
// Ethernet header, so that every packet a NIC passes fits, and the
// sandboxes of a node together run ahead of the root by no more than a
// packet each.
const UplinkBurst = 65536 + 14

// Uplink is a NIC's link as its qdisc sees it once the sandbox is a
// class of its node: the link itself (every packet goes on to it), with
// a gate (dispatch.Uplink) that holds what leaves to the class's share,
// and counters of what left, which its Member publishes. On the receive
// path it is the writer that delivers to the sandbox's stack
// (NewUplinkWriter), with no link.
type Uplink struct {
	stack.LinkEndpoint
	w      stack.LinkWriter
	bucket *Bucket
	bytes  atomic.Uint64
	pkts   atomic.Uint64

	// parked says the class's Runner is parked; wake unparks it (set
	// once, by Run, before the uplink carries packets).
	parked atomic.Bool
	wake   func()
}

var _ dispatch.Uplink = (*Uplink)(nil)

// NewUplink returns link as the class's uplink, its share rate bytes a
// second until its Member sets another.
func NewUplink(link stack.LinkEndpoint, rate uint64) *Uplink {
	return &Uplink{LinkEndpoint: link, w: link, bucket: NewBucket(rate, UplinkBurst)}
}

// NewUplinkWriter returns w, what the receive path delivers to, as the
// class's uplink in the receive direction (ingress.NewTo's out).
func NewUplinkWriter(w stack.LinkWriter, rate uint64) *Uplink {
	return &Uplink{w: w, bucket: NewBucket(rate, UplinkBurst)}
}

// UplinkGate implements dispatch.Uplink.
func (u *Uplink) UplinkGate() dispatch.Gate { return u.bucket }

// Bucket returns the class's bucket.
func (u *Uplink) Bucket() *Bucket { return u.bucket }

// WritePackets writes pkts to the link and counts what it took.
func (u *Uplink) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	n, err := u.w.WritePackets(pkts)
	var bytes uint64
	for i, pkt := range pkts.AsSlice() {
		if i >= n {
			break
		}
		bytes += uint64(pkt.Size())
	}
	u.bytes.Add(bytes)
	u.pkts.Add(uint64(max(n, 0)))
	if u.parked.Load() && u.parked.CompareAndSwap(true, false) {
		u.wake()
	}
	return n, err
}

// Counters returns what left through the uplink and whether a packet
// waited for the class's share since the last call.
func (u *Uplink) Counters() Counters {
	return Counters{Bytes: u.bytes.Load(), Packets: u.pkts.Load(), Busy: u.bucket.Waited(), Tokens: u.bucket.Tokens()}
}

var _ dispatch.NowGate = (*Bucket)(nil)
