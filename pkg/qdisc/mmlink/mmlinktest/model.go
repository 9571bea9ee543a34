// Package mmlinktest is a model of mahimahi's mm-link (LinkQueue in
// src/frontend/link_queue.cc, with DropTailPacketQueue), written from
// mahimahi's source apart from package mmlink, to hold mmlink's queue to
// it packet for packet. It keeps mahimahi's state as mahimahi has it
// (next_delivery_, base_timestamp_, packet_queue_, packet_in_transit_,
// output_queue_) in plain slices, runs the link one opportunity at a
// time, and works in ns where mahimahi works in ms: an opportunity at
// trace time T ms is at Start + T*1e6 ns, and one at or before the time
// a packet arrives is run before the packet is queued.
package mmlinktest

// PacketSize is mahimahi's PACKET_SIZE: what an opportunity carries.
const PacketSize = 1504

// Packet is a packet the model holds: the caller's id, its size as
// mahimahi counts it (its TUN read: IP bytes and 4), and, once it has
// left, the time it left.
type Packet struct {
	ID       uint64
	Size     uint32
	Arrival  int64
	Departed int64
}

// Model is an mm-link.
type Model struct {
	schedule []uint32
	base     int64
	next     int

	// PacketLimit and ByteLimit are droptail's packets= and bytes= (0:
	// none).
	PacketLimit, ByteLimit uint32

	queue     []Packet
	transit   Packet
	transitOK bool
	bytesLeft uint32
	output    []Packet

	// Drops counts the packets droptail refused.
	Drops uint64
}

// New returns the model of an mm-link over schedule (ms, mahimahi's
// trace) started at start ns, with droptail's limits.
func New(schedule []uint32, start int64, packets, bytes uint32) *Model {
	return &Model{schedule: append([]uint32(nil), schedule...), base: start, PacketLimit: packets, ByteLimit: bytes}
}

// nextDeliveryTime is next_delivery_time (the trace always repeats).
func (m *Model) nextDeliveryTime() int64 {
	return m.base + int64(m.schedule[m.next])*1_000_000
}

// useOpportunity is use_a_delivery_opportunity.
func (m *Model) useOpportunity() {
	m.next = (m.next + 1) % len(m.schedule)
	if m.next == 0 {
		m.base += int64(m.schedule[len(m.schedule)-1]) * 1_000_000
	}
}

// rationalize is rationalize(now).
func (m *Model) rationalize(now int64) {
	for m.nextDeliveryTime() <= now {
		at := m.nextDeliveryTime()
		left := uint32(PacketSize)
		m.useOpportunity()
		for left > 0 {
			if m.bytesLeft == 0 {
				if len(m.queue) == 0 {
					break
				}
				m.transit, m.queue = m.queue[0], m.queue[1:]
				m.transitOK = true
				m.bytesLeft = m.transit.Size
			}
			n := min(left, m.bytesLeft)
			m.bytesLeft -= n
			left -= n
			if m.bytesLeft == 0 {
				p := m.transit
				p.Departed = at
				m.output = append(m.output, p)
				m.transitOK = false
			}
		}
	}
}

// Enqueue is read_packet at now for a packet of size bytes (mahimahi's
// contents): it reports whether droptail took it.
func (m *Model) Enqueue(id uint64, size uint32, now int64) bool {
	m.rationalize(now)
	var bytes uint64
	for _, p := range m.queue {
		bytes += uint64(p.Size)
	}
	ok := true
	if m.ByteLimit != 0 && bytes+uint64(size) > uint64(m.ByteLimit) {
		ok = false
	}
	if m.PacketLimit != 0 && len(m.queue)+1 > int(m.PacketLimit) {
		ok = false
	}
	if !ok {
		m.Drops++
		return false
	}
	m.queue = append(m.queue, Packet{ID: id, Size: size, Arrival: now})
	return true
}

// Dequeue runs the link up to now and takes the first packet written
// out (write_packets), if any.
func (m *Model) Dequeue(now int64) (Packet, bool) {
	m.rationalize(now)
	if len(m.output) == 0 {
		return Packet{}, false
	}
	p := m.output[0]
	m.output = m.output[1:]
	return p, true
}

// Left runs the link up to now and returns the packets written out and
// not yet taken, in order.
func (m *Model) Left(now int64) []Packet {
	m.rationalize(now)
	return append([]Packet(nil), m.output...)
}

// Len returns the packets held: written out and not yet taken, in
// transit, and queued.
func (m *Model) Len() int {
	n := len(m.output) + len(m.queue)
	if m.transitOK {
		n++
	}
	return n
}

// NextDeparture returns when the next packet leaves if none arrives
// meanwhile (a copy of the model runs opportunity by opportunity until
// one is written out); ok is false when nothing is queued or in
// transit.
func (m *Model) NextDeparture() (int64, bool) {
	if len(m.queue) == 0 && !m.transitOK {
		return 0, false
	}
	c := *m
	c.queue = append([]Packet(nil), m.queue...)
	c.output = nil
	for {
		at := c.nextDeliveryTime()
		c.rationalize(at)
		if len(c.output) > 0 {
			return c.output[0].Departed, true
		}
	}
}
