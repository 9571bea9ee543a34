package dispatch

import "time"

// Uplink is a lower link that holds what leaves through it to a rate of
// its own, above the qdisc's: a sandbox's class of its node's uplink
// (package node). A lane writing to one books every packet with the
// link's gate after its own gate, so that whatever the qdisc (fifo,
// tbf, htb, cake), its packets wait in its queue for the link's tokens,
// as a child class's wait for their parent's in Linux's htb, and
// nothing is refused or dropped at the link for want of them.
type Uplink interface {
	UplinkGate() Gate
}

// Horizon is an Uplink's gate whose rate changes as the lanes run (a
// node's share, every few ms): it bounds how far ahead a lane books with
// it, BookBytes bytes of packets at once (one packet at least), so that
// a new rate holds from the next booking rather than after a batch
// booked at the old one.
type Horizon interface {
	BookBytes() uint64
}

// UplinkSlack is the least Slack of a Group whose lower link is an
// Uplink. Its lanes wait for the link's tokens whatever the qdisc, and a
// timer that fired at every packet's departure cost its sandbox a quarter
// more CPU than an unshaped one at the same rate (and the receive path
// twice as much), where tbf's own lanes wake at most once in its Slack.
// A departure leaves at most this late; the link's bucket catches up
// what is late, so its rate holds.
const UplinkSlack = time.Millisecond

// slack is the Slack of the lanes' timer: cfg.Slack, at least
// UplinkSlack on an Uplink.
func (cfg *Config) slack() time.Duration {
	if uplinkOf(cfg.Lower) != nil {
		return max(cfg.Slack, UplinkSlack)
	}
	return cfg.Slack
}

// uplinkOf returns the gate of lower, if it is an Uplink.
func uplinkOf(lower any) Gate {
	if u, ok := lower.(Uplink); ok {
		return u.UplinkGate()
	}
	return nil
}

// chain returns a Gate that books with first, then with then from the
// departures first gave: a packet leaves when both let it. Either may be
// nil.
func chain(first, then Gate) Gate {
	switch {
	case then == nil:
		return first
	case first == nil:
		return then
	}
	return &chained{first: first, then: then}
}

// chained is two gates one after the other.
type chained struct {
	first, then Gate
}

// BookAll implements Gate.BookAll: then books each packet from the
// departure first booked for it.
func (c *chained) BookAll(seen []int64, sizes []uint32, departures []int64) {
	c.first.BookAll(seen, sizes, departures)
	c.then.BookAll(departures, sizes, departures)
}

// DrainAfter implements Drainer with the sooner of the two gates' (a
// gate that cannot say counts as draining at last): a drain said too
// soon costs a wake-up, one said too late would idle the link.
func (c *chained) DrainAfter(last int64, bytes uint64) int64 {
	at := func(g Gate) int64 {
		if d, ok := g.(Drainer); ok {
			return d.DrainAfter(last, bytes)
		}
		return last
	}
	return min(at(c.first), at(c.then))
}

// Start implements Starter for the gates that are Starters.
func (c *chained) Start(now int64) {
	for _, g := range []Gate{c.first, c.then} {
		if s, ok := g.(Starter); ok {
			s.Start(now)
		}
	}
}
