package htbtest

import "fmt"

// The model's constants and defaults, from Linux (sch_htb.c,
// include/uapi/linux/pkt_sched.h) and tc (q_htb.c), not from package htb:
// the model states what Linux does apart from the code it checks.

// Mode is a class's mode, sch_htb.c's enum htb_cmode.
type Mode uint8

const (
	// CantSend is HTB_CANT_SEND: over its ceil, the class neither sends
	// nor borrows.
	CantSend Mode = iota
	// MayBorrow is HTB_MAY_BORROW: within its ceil, over its rate; it
	// sends only what an ancestor lends.
	MayBorrow
	// CanSend is HTB_CAN_SEND: within its rate.
	CanSend
)

// String returns the mode's name in sch_htb.c.
func (m Mode) String() string {
	switch m {
	case CantSend:
		return "HTB_CANT_SEND"
	case MayBorrow:
		return "HTB_MAY_BORROW"
	case CanSend:
		return "HTB_CAN_SEND"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

const (
	// maxDepth is TC_HTB_MAXDEPTH: the levels of a tree, leaves at 0 and
	// top inner classes at maxDepth-1.
	maxDepth = 8
	// numPrio is TC_HTB_NUMPRIO: a leaf's prio is below it.
	numPrio = 8
	// mbuffer is cl->mbuffer (60ULL * NSEC_PER_SEC, htb_change_class):
	// how far tokens may fall below 0, and the most credit the time
	// since a class's last charge adds, in ns.
	mbuffer = int64(60e9)
	// defaultR2Q is tc's r2q when none is given (q_htb.c); the kernel
	// takes what tc sends.
	defaultR2Q = 10
	// minQuantum and maxQuantum bound a quantum derived from the rate
	// (htb_change_class's "quantum of class is small/big" clamps); one
	// given is taken as it is.
	minQuantum, maxQuantum = 1000, 200000
	// tcMTU is q_htb.c's mtu, 1600 bytes: tc's default burst and cburst
	// are rate/HZ plus it (HZ being 1e9 with a ns clock).
	tcMTU = 1600
	// txQueueLen is a device's default tx_queue_len (1000), which
	// htb_init takes as direct_qlen and pfifo_init as a leaf's limit when
	// none is given.
	txQueueLen = 1000
)
