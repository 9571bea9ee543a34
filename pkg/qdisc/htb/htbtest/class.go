package htbtest

import "github.com/netqdisc/netqdisc/pkg/qdisc/rate"

// class is one class of the model: sch_htb's struct htb_class, its leaf
// queue a pfifo or a bfifo of (seq, size).
type class struct {
	id     uint32
	parent *class
	// children counts the classes under this one; a class with children
	// is inner.
	children int
	level    int

	// The parameters in force (htb_change_class): prio and quantum are
	// set only while the class is a leaf, as Linux does.
	rateBPS, ceilBPS uint64
	burst, cburst    uint32
	prio             uint8
	quantum          int64
	rate, ceil       rate.Rate
	buffer, cbuffer  int64

	// The buckets (ns of credit) as of tc, and the mode as last computed.
	tokens, ctokens, tc int64
	mode                Mode

	// prioActivity has bit p set while the class takes part in prio p: a
	// leaf with packets at its prio, an inner class whose feed p is not
	// empty.
	prioActivity uint8

	// A leaf's DRR deficit at each level it may be served from, and its
	// queue: the default pfifo, or a bfifo of byteLimit bytes.
	deficit   [maxDepth]int64
	queue     []Departure
	backlog   uint64
	bfifo     bool
	byteLimit uint64

	// An inner class's feeds: per prio, the children that may borrow
	// from it, in classid order, with the round-robin pointer.
	feed [numPrio]idList

	// The class's place in its level's wait queue, while it is in it.
	inPQ  bool
	pqKey int64
	pqSeq uint64

	bytes, packets, drops, overlimits, lends, borrows uint64
}

// isLeaf reports whether the class is a leaf (level 0, no children).
func (cl *class) isLeaf() bool { return cl.children == 0 }

// classMode is htb_class_mode with htb_hysteresis 0: the class's mode diff
// ns after tc, and how long until it changes (when not CanSend).
func classMode(cl *class, diff int64) (Mode, int64) {
	if toks := cl.ctokens + diff; toks < 0 {
		return CantSend, -toks
	}
	if toks := cl.tokens + diff; toks >= 0 {
		return CanSend, diff
	}
	return MayBorrow, -(cl.tokens + diff)
}

// accntTokens is htb_accnt_tokens: refill by diff up to buffer, pay for
// bytes, and clamp at -mbuffer.
func accntTokens(cl *class, bytes uint32, diff int64) {
	cl.tokens = pay(cl.tokens+diff, cl.buffer, int64(cl.rate.TimeNS(bytes)))
}

// accntCTokens is htb_accnt_ctokens: accntTokens for the ceil bucket.
func accntCTokens(cl *class, bytes uint32, diff int64) {
	cl.ctokens = pay(cl.ctokens+diff, cl.cbuffer, int64(cl.ceil.TimeNS(bytes)))
}

// pay is the arithmetic both accnt functions share.
func pay(toks, depth, cost int64) int64 {
	if toks > depth {
		toks = depth
	}
	toks -= cost
	if toks <= -mbuffer {
		toks = 1 - mbuffer
	}
	return toks
}
