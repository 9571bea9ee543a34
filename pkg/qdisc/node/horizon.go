package node

import (
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
)

// Horizon is how far ahead a class's qdisc books its packets with the
// class's bucket: its share changes every Period, and takes hold from
// the next booking.
const Horizon = Period

// BookBytes implements dispatch.Horizon: Horizon's worth of the rate in
// force.
func (b *Bucket) BookBytes() uint64 {
	return b.Rate() * uint64(Horizon) / uint64(time.Second)
}

var _ dispatch.Horizon = (*Bucket)(nil)

// bookedUntil returns the time (ns, on the lanes' clock) the last packet
// booked with the bucket departs at: later than now, a packet is waiting
// for the class's share.
func (b *Bucket) bookedUntil() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tc
}
