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
