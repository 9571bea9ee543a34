package cake

// The modes a Config names (isolation, diffserv, ACK filter, ATM
// framing), numbered as the kernel's, with tc-cake's words for them.

import "fmt"

// Isolation is how cake tells flows apart for fairness (tc-cake's flow
// isolation words; the kernel's CAKE_FLOW_* values).
type Isolation uint8

// The isolation modes, numbered as CAKE_FLOW_* in
// include/uapi/linux/pkt_sched.h.
const (
	// FlowBlind: one queue per tin, no isolation ("flowblind").
	FlowBlind Isolation = iota
	// SrcHost: flows are source addresses ("srchost").
	SrcHost
	// DstHost: flows are destination addresses ("dsthost").
	DstHost
	// Hosts: flows are source-destination address pairs ("hosts").
	Hosts
	// Flows: flows are 5-tuples, as in fq_codel ("flows").
	Flows
	// DualSrcHost: 5-tuples, fair first between source addresses
	// ("dual-srchost").
	DualSrcHost
	// DualDstHost: 5-tuples, fair first between destination addresses
	// ("dual-dsthost").
	DualDstHost
	// TripleIsolate: 5-tuples, fair between source and destination
	// addresses both ("triple-isolate"), the default.
	TripleIsolate
	numIsolation
)

var isolationWords = [numIsolation]string{"flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost", "triple-isolate"}

// String returns tc-cake's word for i.
func (i Isolation) String() string {
	if i < numIsolation {
		return isolationWords[i]
	}
	return fmt.Sprintf("isolation(%d)", uint8(i))
}

// Diffserv is how cake sorts packets into tins by their DSCP (the
// kernel's CAKE_DIFFSERV_* values).
type Diffserv uint8

// The tin modes, numbered as CAKE_DIFFSERV_*.
const (
	// Diffserv3: bulk, best effort, voice ("diffserv3"), the default.
	Diffserv3 Diffserv = iota
	// Diffserv4: bulk, best effort, video, voice ("diffserv4").
	Diffserv4
	// Diffserv8: eight tins ("diffserv8").
	Diffserv8
	// BestEffort: one tin ("besteffort").
	BestEffort
	// Precedence: eight tins by the old TOS precedence ("precedence").
	Precedence
	numDiffserv
)

var diffservWords = [numDiffserv]string{"diffserv3", "diffserv4", "diffserv8", "besteffort", "precedence"}

// String returns tc-cake's word for d.
func (d Diffserv) String() string {
	if d < numDiffserv {
		return diffservWords[d]
	}
	return fmt.Sprintf("diffserv(%d)", uint8(d))
}

// AckFilter is what cake does with pure TCP ACKs a later one makes
// redundant (the kernel's CAKE_ACK_* values).
type AckFilter uint8

// The ACK filter modes, numbered as CAKE_ACK_*.
const (
	// NoAckFilter keeps every ACK ("no-ack-filter"), the default.
	NoAckFilter AckFilter = iota
	// AckFilterOn drops an ACK a later one in the queue covers
	// ("ack-filter").
	AckFilterOn
	// AckFilterAggressive drops more of them ("ack-filter-aggressive").
	AckFilterAggressive
	numAckFilter
)

var ackFilterWords = [numAckFilter]string{"no-ack-filter", "ack-filter", "ack-filter-aggressive"}

// String returns tc-cake's word for a.
func (a AckFilter) String() string {
	if a < numAckFilter {
		return ackFilterWords[a]
	}
	return fmt.Sprintf("ack-filter(%d)", uint8(a))
}

// ATM is the cell framing cake adds to each packet's length (the kernel's
// CAKE_ATM_* values).
type ATM uint8

// The framings, numbered as CAKE_ATM_*.
const (
	// NoATM: no framing ("noatm"), the default.
	NoATM ATM = iota
	// ATMCells: 53-byte cells carrying 48 bytes each, as on ADSL ("atm").
	ATMCells
	// PTM: one byte in 65 of 64b/65b coding, as on VDSL2 ("ptm").
	PTM
	numATM
)

var atmWords = [numATM]string{"noatm", "atm", "ptm"}

// String returns tc-cake's word for a.
func (a ATM) String() string {
	if a < numATM {
		return atmWords[a]
	}
	return fmt.Sprintf("atm(%d)", uint8(a))
}
