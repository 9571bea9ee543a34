// Package qdisc is the vocabulary the netqdisc queueing disciplines share:
// the statistics every qdisc reports, printed the way `tc -s qdisc` prints
// them, the batch size they hand the lower link, and Queue, the shape of
// every queue a dispatcher drains.
//
// The disciplines themselves live in the subpackages fifo, tbf and
// fqcodel; each is a gvisor.dev/gvisor/pkg/tcpip/stack.QueueingDiscipline
// that a sandbox runtime installs on a NIC with stack.NICOptions{QDisc: q}.
package qdisc

import (
	"fmt"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// BatchSize is the most packets a dispatcher hands the lower link in one
// WritePackets call: a 64 KiB GSO segment cut into 46 packets of 1420 bytes
// and one of 216 bytes, as in gVisor's own qdiscs.
const BatchSize = 47

// Stats are a qdisc's counters, as `tc -s qdisc` shows them.
type Stats struct {
	// Bytes and Packets were handed to, and accepted by, the lower link.
	Bytes   uint64
	Packets uint64
	// Drops counts packets dropped for any reason: queue full, too large
	// for the bucket, refused by the lower link for a reason other than
	// room, or queued when the qdisc was closed.
	Drops uint64
	// Overlimits counts the times the dispatcher found the head packet over
	// the rate and had to wait for tokens (Linux's overlimits).
	Overlimits uint64
	// Requeues counts packets the lower link refused for want of room
	// and the qdisc put back at its head to send again (Linux's
	// dev_requeue_skb).
	Requeues uint64
	// BacklogBytes and BacklogPackets are queued now.
	BacklogBytes   uint64
	BacklogPackets uint64
}

// Add returns the sum of s and o, field by field.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Bytes:          s.Bytes + o.Bytes,
		Packets:        s.Packets + o.Packets,
		Drops:          s.Drops + o.Drops,
		Overlimits:     s.Overlimits + o.Overlimits,
		Requeues:       s.Requeues + o.Requeues,
		BacklogBytes:   s.BacklogBytes + o.BacklogBytes,
		BacklogPackets: s.BacklogPackets + o.BacklogPackets,
	}
}

// String prints s in the two lines of `tc -s qdisc`:
//
//	Sent 3000 bytes 3 pkt (dropped 0, overlimits 1 requeues 0)
//	 backlog 2000b 2p requeues 0
func (s Stats) String() string {
	return fmt.Sprintf("Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d)\n backlog %sp requeues %d",
		s.Bytes, s.Packets, s.Drops, s.Overlimits, s.Requeues,
		rate.FormatSize(s.BacklogBytes)+" "+fmt.Sprint(s.BacklogPackets), s.Requeues)
}
