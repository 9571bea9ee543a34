package htb

import (
	"maps"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// Linux's bounds and defaults (include/uapi/linux/pkt_sched.h, sch_htb.c,
// iproute2's q_htb.c).
const (
	// MaxDepth is TC_HTB_MAXDEPTH: the levels a tree may have, leaves
	// (level 0) included.
	MaxDepth = 8
	// NumPrio is TC_HTB_NUMPRIO: prio is 0 (served first) to NumPrio-1.
	NumPrio = 8
	// DefaultR2Q is tc's r2q: a leaf's quantum is its rate / R2Q bytes.
	DefaultR2Q = 10
	// MinQuantum and MaxQuantum bound a quantum computed from the rate;
	// Linux clamps to them and warns ("quantum of class X is small/big.
	// Consider r2q change.").
	MinQuantum = 1000
	MaxQuantum = 200000
	// DefaultMTU is tc htb's mtu, from which a Burst or CBurst not given
	// is computed: rate/hz + mtu, hz being 1e9 on a kernel with high
	// resolution timers.
	DefaultMTU = 1600
	// DefaultDirectQLen is the direct queue's bound in packets when not
	// given: the device's tx_queue_len, 1000 for a veth or an Ethernet.
	DefaultDirectQLen = 1000
	// DefaultLeafLimit is the default leaf's bound in packets: pfifo
	// created by qdisc_create_dflt takes tx_queue_len.
	DefaultLeafLimit = 1000
	// MBuffer is how far a class's tokens may go below 0, and the most
	// credit the time since its last charge adds: sch_htb's mbuffer.
	MBuffer = 60 * time.Second
)

// Mode is a class's mode (sch_htb's enum htb_cmode).
type Mode uint8

const (
	// CantSend: the class is over its ceil (ctokens < 0).
	CantSend Mode = iota
	// MayBorrow: within its ceil but over its rate (tokens < 0): it may
	// send only what an ancestor lends.
	MayBorrow
	// CanSend: within its rate (tokens >= 0).
	CanSend
)

// Config is an htb qdisc with its classes and filters, as
// `tc qdisc add dev eth0 root handle 1: htb default 20 r2q 10` with
// `tc class add ...` and `tc filter add ...` would configure it.
type Config struct {
	// Handle is the qdisc's handle, major:0 (1: is 0x00010000); 0 means
	// 1:. Every class's ID has its major.
	Handle uint32
	// Default is the class (a full classid) that packets no filter
	// classifies go to. 0, or a class that does not exist or is not a
	// leaf, sends them to the direct queue, unshaped, as Linux does
	// (kubernetes#25092's pitfall).
	Default uint32
	// R2Q divides a leaf's rate into its quantum when the class gives
	// none; 0 means DefaultR2Q.
	R2Q uint32
	// DirectQLen bounds the direct queue in packets; 0 means
	// DefaultDirectQLen.
	DirectQLen uint32
	// LeafLimit bounds each default leaf (a pfifo) in packets; 0 means
	// DefaultLeafLimit.
	LeafLimit uint32
	// Slack is how late a wake-up may come and still be caught up in
	// full (ours, as tbf's Slack: Linux's watchdog is never that late): a
	// dequeue that comes later than Slack after the event it waited for
	// replays only the last Slack of what on-time dequeues would have
	// sent, so a class sends back to back at most its cburst and Slack of
	// its ceil, however late the timer, and the rest of the time is lost,
	// as to a late watchdog in Linux. 0 means DefaultSlack; NoSlack
	// catches nothing up (Linux's accounting); at most MaxSlack.
	Slack time.Duration
	// Classes are the classes: each names its parent, which comes
	// before it (a class whose Parent is 0 or Handle hangs from the
	// qdisc itself).
	Classes []ClassConfig
	// Rules are the qdisc's own filters, its root chain (tc filter add dev
	// eth0 parent 1: ... prio N), tried in order: the first that matches
	// gives the packet's class. A rule whose class is the qdisc's handle
	// (X:0) sends its packets to the direct queue; one whose class is an
	// inner class sends them on through that class's chain (Chains); one
	// whose class does not exist sends them to Default. A rule with no
	// match words (only a class) is tc's matchall: it takes every packet
	// that reaches it, malformed ones included, and the rules after it are
	// never tried.
	Rules []classify.Rule
	// Chains are the filters attached to inner classes (tc filter add dev
	// eth0 parent 1:10 ... classid 1:101), by class: a packet that a chain
	// sends to an inner class is classified again by that class's chain,
	// down to a leaf, as Linux's htb_classify does; a chain that no rule
	// of matches, or an inner class with no chain, sends the packet to
	// Default. Their rules are as Rules'. A chain may name any class, as
	// in Linux, but no loop (a chain that leads back to its own class)
	// and no path through more than MaxDepth inner classes, where Linux
	// would drop the packet.
	//
	// A map, not a field of ClassConfig: a class's settings and the
	// filters attached to it are separate objects in tc (tc class, tc
	// filter parent), changed by separate commands, and a change of a
	// class in place (ChangeClass) keeps its filters.
	Chains map[uint32][]classify.Rule
	// Direction is the way the packets travel (classify.Egress for the
	// send path, classify.Ingress for the receive path): it decides which
	// address a rule's dst matches.
	Direction classify.Direction
}

// ClassConfig is one class, in the words of `tc class add dev eth0
// parent 1:1 classid 1:10 htb rate 10mbit ceil 20mbit burst 15k cburst
// 15k prio 1 quantum 1514`.
type ClassConfig struct {
	// ID is the class's classid (major:minor, minor not 0).
	ID uint32
	// Parent is the parent class's ID, or 0 (or the qdisc's Handle) for a
	// class at the top of the tree.
	Parent uint32
	// Rate is the rate the class is guaranteed, in bytes per second;
	// required.
	Rate uint64
	// Ceil is the most it may send, borrowing from its ancestors, in
	// bytes per second; 0 means Rate.
	Ceil uint64
	// Burst and CBurst are the depths of the rate and ceil buckets in
	// bytes; 0 means tc's default, rate/1e9 + DefaultMTU (ceil's for
	// CBurst).
	Burst  uint32
	CBurst uint32
	// Prio is the leaf's priority, 0 (first) to NumPrio-1: among leaves
	// that may send at one level, the lowest prio is served first, and
	// excess bandwidth goes to it first.
	Prio uint8
	// Quantum is how many bytes the leaf sends in its turn of the
	// round-robin among leaves of one prio that borrow at one level; 0
	// means Rate/R2Q clamped to MinQuantum..MaxQuantum.
	Quantum uint32
	// Overhead and MPU are added to each packet's length, and its least
	// charged length, for both buckets (tc's overhead and mpu).
	Overhead int32
	MPU      uint32
	// Quota, if not nil, is a byte budget per period for the class and
	// every class under it: once spent, they fall, as a whole, to the
	// quota's rate until the period renews (see Quota).
	Quota *Quota
	// Leaf, if not nil, is the leaf's qdisc (fq_codel, a tbf's queue, a
	// bfifo) in place of the default pfifo of Config.LeafLimit packets,
	// as `tc qdisc add dev eth0 parent 1:10 fq_codel` grafts one. Only
	// a leaf may have one; the tree takes it over.
	Leaf qdisc.Queue
}

// withDefaults fills in what c leaves 0.
func (c Config) withDefaults() Config {
	if c.Handle == 0 {
		c.Handle = 1 << 16
	}
	if c.R2Q == 0 {
		c.R2Q = DefaultR2Q
	}
	if c.DirectQLen == 0 {
		c.DirectQLen = DefaultDirectQLen
	}
	if c.LeafLimit == 0 {
		c.LeafLimit = DefaultLeafLimit
	}
	if c.Slack == 0 {
		c.Slack = DefaultSlack
	}
	c.Classes = append([]ClassConfig(nil), c.Classes...)
	c.Chains = maps.Clone(c.Chains)
	for i := range c.Classes {
		c.Classes[i] = c.Classes[i].WithDefaults()
	}
	return c
}

// WithDefaults returns c with tc's defaults for what it leaves 0: a ceil
// of the rate, and buckets of rate/hz + mtu bytes (and a quota of its
// own). It is the class as the tree runs it, less its quantum, which
// takes the qdisc's r2q: what a rule comparing classes (Script.Tighten)
// compares.
func (c ClassConfig) WithDefaults() ClassConfig {
	if c.Ceil == 0 {
		c.Ceil = c.Rate
	}
	if c.Burst == 0 {
		c.Burst = uint32(min(c.Rate/1e9+DefaultMTU, 1<<32-1))
	}
	if c.CBurst == 0 {
		c.CBurst = uint32(min(c.Ceil/1e9+DefaultMTU, 1<<32-1))
	}
	if c.Quota != nil {
		q := *c.Quota // the tree's own
		c.Quota = &q
	}
	return c
}
