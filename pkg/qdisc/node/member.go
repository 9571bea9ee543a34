package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// Stale is how long a sandbox may go without publishing before the
// others count it gone (killed, or stopped) and share out its guarantee:
// well past Period, and within the second the issue allows.
const Stale = 500 * time.Millisecond

// Period is how often a member publishes and recomputes its share.
const Period = 10 * time.Millisecond

// Member is a sandbox's place on a board: its slot, and what it last
// counted, to tell the board what it wants. Not safe for concurrent use.
type Member struct {
	board *Board
	slot  int
	owner uint64
	class htb.ClassConfig

	// gen and classes are the tree last read (classes: its classes with
	// tc's defaults, to which the live leaves are added).
	gen     uint64
	classes []htb.ClassConfig
	r2q     uint64

	// leaves are the live leaves last read. idx is the tree and them
	// indexed, for key (the tree's generation and the leaves' classes);
	// wants is the demand by position in it, self the class's position.
	leaves          []Leaf
	idx             *shares
	key, scratchKey []uint64
	wants           []uint64
	self            int

	// last are the counters and the time of the last Share.
	lastAt                 int64
	lastBytes, lastPackets uint64
	lended, borrowed       uint64
	share                  uint64
	// wanted is the demand last published.
	wanted uint64
}

// NewMember returns the member of board for slot, which the runtime
// joined for owner with class c.
func NewMember(board *Board, slot int, owner uint64, c htb.ClassConfig) (*Member, error) {
	if slot < 0 || slot >= board.Slots() {
		return nil, fmt.Errorf("node: slot %d is not one of the board's %d", slot, board.Slots())
	}
	return &Member{board: board, slot: slot, owner: owner, class: c, share: c.Rate}, nil
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
// (ns, CLOCK_MONOTONIC) and returns the bytes a second it may send: its
// leaf's Allocate over the live leaves, never below its rate. A busy
// class (a packet waited for its share) wants its ceil; another wants
// what it sent since the last call and a sixteenth more, so that a class
// sending steadily below its share is not made to wait by turns.
func (m *Member) Share(now int64, c Counters) (uint64, error) {
	if err := m.readTree(); err != nil {
		return m.class.Rate, err
	}
	demand := m.demand(now, c)
	m.leaves = m.board.SnapshotInto(m.leaves, now, int64(Stale))
	share := max(m.allocate(m.leaves, demand), m.class.Rate)
	m.count(now, c, share)
	if !m.board.Publish(m.slot, m.owner, now, Published{
		Demand: demand, Share: share,
		Bytes: c.Bytes, Packets: c.Packets, Lended: m.lended, Borrowed: m.borrowed, Tokens: c.Tokens,
	}) {
		return m.class.Rate, fmt.Errorf("node: slot %d is no longer this sandbox's (it stalled past %v and was reclaimed)", m.slot, Stale)
	}
	return share, nil
}

// allocate returns the class's Allocate over the tree and leaves, its
// own demand demand. The indexed tree is kept while the tree and the
// live leaves' classes stay as they are (a node's sandboxes all do this
// every Period: indexing costs ten times what sharing does).
func (m *Member) allocate(leaves []Leaf, demand uint64) uint64 {
	key := append(m.scratchKey[:0], m.gen)
	self := false
	for _, l := range leaves {
		self = self || l.Slot == m.slot
		key = append(key, uint64(l.Slot), uint64(l.Class.ID)<<32|uint64(l.Class.Parent), l.Class.Rate, l.Class.Ceil, uint64(l.Class.Prio)<<32|uint64(l.Class.Quantum))
	}
	m.scratchKey = key
	if m.idx == nil || !slices.Equal(key, m.key) {
		classes := slices.Clone(m.classes)
		for _, l := range leaves {
			c := l.Class
			if l.Slot == m.slot {
				c = m.class // its own, as the runtime gave it, whatever the board says
			}
			classes = append(classes, withQuantum(c, m.r2q))
		}
		if !self {
			classes = append(classes, withQuantum(m.class, m.r2q))
		}
		m.idx, m.key = index(classes), slices.Clone(key)
		m.wants = make([]uint64, len(classes))
		m.self = len(classes) - 1
		for i, c := range classes {
			if c.ID == m.class.ID {
				m.self = i
			}
		}
	}
	n := len(m.classes)
	clear(m.wants)
	for i, l := range leaves {
		m.wants[n+i] = l.Demand
	}
	m.wants[m.self] = demand
	m.idx.run(m.wants)
	return m.idx.use[m.self]
}

// demand is what the class wants: its ceil if busy, else a sixteenth
// more than it sent since the last call, never less than half what it
// wanted at the last call (a quarter, if it sent nothing).
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
		d = max(m.wanted/2, sent+sent/16)
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

// readTree reads the board's tree when its generation moved on.
func (m *Member) readTree() error {
	if m.gen != 0 && m.board.TreeGen() == m.gen {
		return nil
	}
	s, gen, err := m.board.Tree()
	if err != nil {
		return err
	}
	if gen == m.gen {
		return nil
	}
	m.r2q = uint64(s.Qdisc.R2Q)
	if m.r2q == 0 {
		m.r2q = htb.DefaultR2Q
	}
	m.classes = m.classes[:0]
	for _, c := range s.Classes {
		m.classes = append(m.classes, withQuantum(c, m.r2q))
	}
	m.gen = gen
	return nil
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

// Leave gives the sandbox's slot back (a sandbox that stops).
func (m *Member) Leave() { m.board.Leave(m.slot, m.owner) }
