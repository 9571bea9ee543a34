package node

import (
	"fmt"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// Stale is how long a sandbox may go without publishing before the
// others count it gone (killed, or stopped) and share out its guarantee:
// well past Period, and within the second the issue allows.
const Stale = 500 * time.Millisecond

// Period is how often a member publishes and recomputes its share.
const Period = 10 * time.Millisecond

// Member is a sandbox's side of its class of the node: its seat, and
// what it last counted, to tell the Allocator what it wants. It keeps
// its class as the runtime gave it, and holds whatever share it reads
// between the class's rate and ceil. Not safe for concurrent use.
type Member struct {
	seat  *Seat
	class htb.ClassConfig

	// last are the counters and the time of the last Share.
	lastAt                 int64
	lastBytes, lastPackets uint64
	lended, borrowed       uint64
	share                  uint64
	// wanted is the demand last published; slack the most a class not
	// waiting wants past what it sends, as the Allocator last gave it.
	wanted, slack uint64
}

// NewMember returns the member of class c (as the runtime joined it)
// over its seat.
func NewMember(seat *Seat, c htb.ClassConfig) *Member {
	c = c.WithDefaults()
	return &Member{seat: seat, class: c, share: c.Rate}
}

// Counters are a sandbox's class's counters as its qdisc keeps them.
type Counters struct {
	// Bytes and Packets have left the sandbox through its class.
	Bytes, Packets uint64
	// Busy says packets waited for the class's share since the last
	// call (its qdisc was at its rate: it wants more).
	Busy bool
	// Tokens are the class's bucket's tokens, in bytes.
	Tokens uint64
}

// Share publishes what the sandbox's class sent and wants as of now
// (ns, CLOCK_MONOTONIC, the clock the Allocator beats by) and returns
// the bytes a second it may send: the share the Allocator last wrote,
// held between its rate and its ceil. Where the Allocator has not
// written for Stale (stopped, or not yet started), or evicted the
// class, it is the class's rate, with an error that says why.
func (m *Member) Share(now int64, c Counters) (uint64, error) {
	demand := m.demand(now, c)
	share, beat, slack, evicted := m.seat.allocated()
	m.slack = slack
	var err error
	switch {
	case evicted:
		share, err = m.class.Rate, fmt.Errorf("node: the operator evicted this sandbox's class from its node (runsc qdisc node ... evict): it holds itself to its rate")
	case now-beat > int64(Stale):
		share, err = m.class.Rate, fmt.Errorf("node: the node's allocator has not written this class's share for %v: it holds itself to its rate", time.Duration(now-beat))
	}
	share = min(max(share, m.class.Rate), ceilOf(m.class))
	m.count(now, c, share)
	m.seat.publish(Published{
		Demand: demand, Bytes: c.Bytes, Packets: c.Packets,
		Lended: m.lended, Borrowed: m.borrowed, Tokens: c.Tokens,
	})
	return share, err
}

// demand is what the class wants: its ceil if busy, else what it sent
// since the last call and a little more (a sixteenth, at most the slack
// the Allocator gives: a 256th of the root's rate, so that a class held
// below its share by its own qdisc leaves at most that unused), never
// less than half what it wanted at the last call (a quarter, if it sent
// nothing).
//
// The others lend what a class does not want, and a class may take back
// its rate at any time without asking (its guarantee): what it takes
// back within a Period, before the others know, is more than the root
// has. So a class that stops wanting gives its share back over a few
// Periods, not at once, and a pause of its TCP's (a loss, an RTT) does
// not swing the node. An idle class still leaves its share within 100
// ms: from its ceil, 4^-10 of it.
func (m *Member) demand(now int64, c Counters) uint64 {
	d := m.wanted / 4
	switch dt := now - m.lastAt; {
	case c.Busy:
		d = ceilOf(m.class)
	case m.lastAt != 0 && dt > 0 && c.Bytes > m.lastBytes:
		sent := mulDiv(c.Bytes-m.lastBytes, uint64(time.Second), uint64(dt))
		more := sent / 16
		if m.slack != 0 {
			more = min(more, m.slack)
		}
		d = max(m.wanted/2, sent+more)
	}
	m.wanted = min(d, ceilOf(m.class))
	return m.wanted
}

// count moves the counters on: the packets sent since the last call,
// split as tc's lended (within the class's rate) and borrowed (past it)
// in proportion to the share's parts.
func (m *Member) count(now int64, c Counters, share uint64) {
	if c.Packets > m.lastPackets {
		n := c.Packets - m.lastPackets
		own := mulDiv(n, m.class.Rate, max(m.share, m.class.Rate))
		m.lended += min(own, n)
		m.borrowed += n - min(own, n)
	}
	m.lastAt, m.lastBytes, m.lastPackets, m.share = now, c.Bytes, c.Packets, share
}

// withQuantum is c with tc's ceil and quantum where it leaves them 0.
func withQuantum(c htb.ClassConfig, r2q uint64) htb.ClassConfig {
	c = c.WithDefaults()
	if c.Quantum == 0 {
		c.Quantum = uint32(min(max(c.Rate/r2q, htb.MinQuantum), htb.MaxQuantum))
	}
	return c
}

// ceilOf is c's ceil, its rate if 0.
func ceilOf(c htb.ClassConfig) uint64 {
	if c.Ceil == 0 {
		return c.Rate
	}
	return c.Ceil
}

// Leave gives the sandbox's class back (a sandbox that stops): the
// Allocator frees its slot at its next step.
func (m *Member) Leave() { m.seat.leave() }
