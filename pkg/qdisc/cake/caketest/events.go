package caketest

// The drops and marks a Model reports, as Events.

import "fmt"

// EventKind says what an Event is.
type EventKind uint8

// The events.
const (
	// DropOverlimit is cake_drop: the memory limit was passed and the
	// head of the fattest queue (by backlog, across tins) went.
	DropOverlimit EventKind = iota + 1
	// DropAckFilter is an older ACK the ACK filter removed.
	DropAckFilter
	// DropCoDel is COBALT's CoDel dropping a packet it could not mark.
	DropCoDel
	// DropBlue is COBALT's BLUE dropping a packet at random.
	DropBlue
	// MarkCE is COBALT marking a packet Congestion Experienced (the
	// packet may still be dropped by BLUE: then DropBlue follows).
	MarkCE
	// DropGSO is a GSO packet that could not be split (skb_gso_segment
	// failed): not TCP or UDP, or no more payload than one segment.
	DropGSO
	// Refused is a Packet the model cannot take (see Enqueue).
	Refused
)

var eventNames = [...]string{"", "drop-overlimit", "drop-ack-filter", "drop-codel", "drop-blue", "mark-ce", "drop-gso", "refused"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is a drop or a mark.
type Event struct {
	Kind EventKind
	// At is the time of the call that made it.
	At int64
	// ID and Seg name the packet.
	ID  uint64
	Seg uint32
	// Tin and Queue are where it was queued (Queue is the flow's index of
	// CAKE_QUEUES); -1 for a packet never queued.
	Tin, Queue int
	// Len is its qdisc_pkt_len.
	Len uint32
	// Reason says more, for Refused.
	Reason string
}
