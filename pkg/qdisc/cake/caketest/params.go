package caketest

import (
	"fmt"
	"math/rand/v2"
)

// FlowMode is cake's flow isolation mode, the CAKE_FLOW_* values of
// include/uapi/linux/pkt_sched.h. The bits: SrcIP 1, DstIP 2, Flows 4.
type FlowMode uint8

// The isolation modes (tc-cake's keywords in the comments).
const (
	FlowNone    FlowMode = 0 // flowblind: one queue per tin
	FlowSrcIP   FlowMode = 1 // srchost
	FlowDstIP   FlowMode = 2 // dsthost
	FlowHosts   FlowMode = 3 // hosts: source and destination pair
	FlowFlows   FlowMode = 4 // flows: the 5-tuple
	FlowDualSrc FlowMode = 5 // dual-srchost: flows, fair over sources
	FlowDualDst FlowMode = 6 // dual-dsthost: flows, fair over destinations
	FlowTriple  FlowMode = 7 // triple-isolate: flows, fair over both
)

// dsrc and ddst are cake_dsrc and cake_ddst: the dual (and triple) modes,
// in which host bulk flow counts divide the flow quantum.
func (f FlowMode) dsrc() bool { return f&FlowDualSrc == FlowDualSrc }
func (f FlowMode) ddst() bool { return f&FlowDualDst == FlowDualDst }

// TinMode is the CAKE_DIFFSERV_* value: how DSCP maps to tins.
type TinMode uint8

// The tin modes.
const (
	Diffserv3  TinMode = 0
	Diffserv4  TinMode = 1
	Diffserv8  TinMode = 2
	BestEffort TinMode = 3
	Precedence TinMode = 4
)

// AckFilter is the CAKE_ACK_* value.
type AckFilter uint8

// The ACK filter modes.
const (
	AckNone       AckFilter = 0
	AckFilterOn   AckFilter = 1 // ack-filter: conservative
	AckAggressive AckFilter = 2 // ack-filter-aggressive
)

// ATMMode is the CAKE_ATM_* value: link-layer framing compensation.
type ATMMode uint8

// The framing modes.
const (
	ATMNone ATMMode = 0
	ATMATM  ATMMode = 1 // 48 bytes of payload per 53-byte cell
	ATMPTM  ATMMode = 2 // one byte per 64 (64b/65b)
)

// Params are cake's kernel-side parameters, as cake_change leaves them in
// struct cake_sched_data (not tc's keywords: iproute2's q_cake.c turns
// "rtt 50ms" into Interval 50000 and Target 2500, rtt/20; see
// SetRTT).
type Params struct {
	// Rate is the shaper's rate in bytes per second (q->rate_bps); 0 is
	// unlimited.
	Rate uint64
	// FlowMode is the isolation mode. The NAT flag (64) is ignored: the
	// model has no conntrack; New refuses other bits.
	FlowMode FlowMode
	// TinMode is the diffserv mode.
	TinMode TinMode
	// Wash clears the DSCP (keeping ECN) of every packet after its tin is
	// chosen (CAKE_FLAG_WASH).
	Wash bool
	// AckFilter is the ACK filter mode.
	AckFilter AckFilter
	// Overhead is added to every packet's length (q->rate_overhead, an
	// s16 in Linux).
	Overhead int16
	// OverheadFlag is CAKE_FLAG_OVERHEAD, which tc sets with any overhead
	// keyword and clears with "raw": the length counted is then the
	// network length (the link header, skb_network_offset, taken off)
	// plus Overhead. Without it (raw, or no overhead keyword) the
	// overhead is added to the whole qdisc_pkt_len.
	OverheadFlag bool
	// MPU is the least length a packet counts for after the overhead
	// (q->rate_mpu, a u16).
	MPU uint16
	// ATM is the framing compensation.
	ATM ATMMode
	// SplitGSO splits GSO packets into their segments on enqueue
	// (CAKE_FLAG_SPLIT_GSO; on by default).
	SplitGSO bool
	// Ingress is CAKE_FLAG_INGRESS: dropped packets still advance the
	// shaper and COBALT counts bulk flows against the target.
	Ingress bool
	// AutorateIngress estimates the rate from arrivals
	// (CAKE_FLAG_AUTORATE_INGRESS).
	AutorateIngress bool
	// Interval is the rtt in microseconds (q->interval; at least 1).
	Interval uint32
	// Target is COBALT's target in microseconds (q->target; at least 1).
	Target uint32
	// Memory is the memory limit in bytes (q->buffer_config_limit); 0
	// lets cake_reconfigure compute it.
	Memory uint32
	// MTU is psched_mtu(dev): the device MTU plus its link header (1514
	// for Ethernet at 1500). It sets the COBALT mtu_time and the default
	// memory limit. 0 means 1514.
	MTU uint32
	// Limit is sch->limit, in packets (10240 from cake_init; tc's "limit"
	// cannot change it for cake). 0 means 10240.
	Limit uint32

	// TrueHeap makes cake_heapify keep a true max-heap: after a swap it
	// compares the children with the backlog sifted down, where Linux
	// goes on comparing with the one that moved up, so that Linux's heap
	// can go wrong (its top not the fattest flow, or an empty one, which
	// makes cake_drop rebuild it). False, the default, is Linux's. Package
	// cake keeps a true heap (its doc says so); its lockstep tests set
	// this to compare overflow drops with it.
	TrueHeap bool

	// Hasher gives the flow and host hashes; nil means FlowHasher{}.
	Hasher Hasher
	// Rand is get_random_u32 (get_random_u16 is its low 16 bits); nil
	// means a PCG generator with a fixed seed, so runs repeat.
	Rand func() uint32
}

// DefaultParams returns what "tc qdisc add dev X root cake" gives with no
// options: cake_init's defaults (q_cake.c sends no attribute it was not
// given): unlimited, triple-isolate, diffserv3, rtt 100ms, target 5ms,
// split-gso on, no wash, no ACK filter, raw lengths (no overhead flag, 0
// overhead, 0 mpu), no ATM, the computed memory limit.
func DefaultParams() Params {
	return Params{
		FlowMode: FlowTriple,
		TinMode:  Diffserv3,
		SplitGSO: true,
		Interval: 100000,
		Target:   5000,
		MTU:      1514,
		Limit:    10240,
	}
}

// SetRTT sets Interval and Target as iproute2's "rtt" keyword does:
// target is rtt/20, at least 1 microsecond.
func (p *Params) SetRTT(rttUS uint32) {
	p.Interval = rttUS
	p.Target = max(rttUS/20, 1)
}

// validate refuses what Linux could not hold, naming what to change.
func (p *Params) validate() error {
	if p.FlowMode&^64 > FlowTriple {
		return fmt.Errorf("caketest: flow mode %d is not one of 0 (flowblind) to 7 (triple-isolate)", p.FlowMode)
	}
	if p.TinMode > Precedence {
		return fmt.Errorf("caketest: tin mode %d is not one of 0 (diffserv3) to 4 (precedence)", p.TinMode)
	}
	if p.AckFilter > AckAggressive {
		return fmt.Errorf("caketest: ack filter %d is not 0 (none), 1 (ack-filter) or 2 (ack-filter-aggressive)", p.AckFilter)
	}
	if p.ATM > ATMPTM {
		return fmt.Errorf("caketest: atm mode %d is not 0 (noatm), 1 (atm) or 2 (ptm)", p.ATM)
	}
	return nil
}

// withDefaults fills what 0 leaves to a default, as cake_change does
// with max(x, 1) for rtt and target.
func (p Params) withDefaults() Params {
	p.FlowMode &^= 64 // the NAT flag: no conntrack here
	p.Interval = max(p.Interval, 1)
	p.Target = max(p.Target, 1)
	if p.MTU == 0 {
		p.MTU = 1514
	}
	if p.Limit == 0 {
		p.Limit = 10240
	}
	if p.Hasher == nil {
		p.Hasher = FlowHasher{}
	}
	if p.Rand == nil {
		r := rand.New(rand.NewPCG(1, 2))
		p.Rand = r.Uint32
	}
	return p
}
