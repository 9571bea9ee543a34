// Package caketest is a model of Linux's sch_cake (net/sched/sch_cake.c,
// Linux 6.12), written from the kernel source apart from any
// implementation, to be the reference a fast cake qdisc is checked
// against in lockstep on a step clock: the same arrivals and the same
// times must give the same departures, drops, ECN marks and ACK-filter
// decisions. It favours a plain transcription over speed: each function
// names the kernel function it follows.
//
// The model is driven by explicit calls, as the kernel's qdisc core drives
// cake: Enqueue at the time a packet arrives, Dequeue whenever the caller
// would dequeue (after every enqueue, until it returns nil, and when the
// watchdog fires: NextTime). Times are int64 nanoseconds of a monotonic
// clock (ktime_get); state that cake_init zeroes (time_next_packet,
// last_packet_time, ...) starts at 0 as in Linux.
//
// Covered: the parameters as cake_change and cake_reconfigure leave them
// (Params), cake_set_rate's rate_ns/rate_shft and COBALT parameters, the
// diffserv tin tables and tin configurations (besteffort, precedence,
// diffserv8, diffserv4, diffserv3) with wash, the buffer limit,
// cake_overhead and cake_calc_overhead (overhead, mpu, ATM and PTM
// framing, raw versus overhead), the global and per-tin virtual-clock
// shaper with its failsafe, cake_hash's 8-way set-associative flow table
// with the host tables and bulk flow counts per host, DRR++ over the new,
// old and decaying flow lists and the tin choice (DRR over tins when
// unlimited, by schedule when shaped), COBALT (CoDel with the cached
// inverse square root, and BLUE), the ACK filter (conservative and
// aggressive), split-gso, ingress mode (drops advance the shaper),
// autorate-ingress, the memory limit with cake_drop's overflow max-heap
// (its exact layout, so that ties between equally fat flows break as in
// Linux), and the counters tc -s qdisc show prints.
//
// Left out, because the netstack lacks what they need (the model ignores
// them): conntrack NAT lookup (CAKE_FLOW_NAT_FLAG), the fwmark tin
// override, skb->priority major:minor tin override and attached tc
// filters (cake_classify's flow and host overrides). Linux also hashes
// with skb->hash when the stack set an L4 hash (skb->l4_hash) and NAT is
// off; the model always dissects, as for a packet with no L4 hash.
//
// Where Linux draws random numbers (get_random_u32 in BLUE's drop test,
// get_random_u16 in cake_get_flow_quantum's dithering), the model calls
// Params.Rand, in the kernel's order, so that an implementation fed the
// same source makes the same decisions. Where Linux hashes with the flow
// dissector and a random siphash key, the model calls Params.Hasher (see
// Hasher and FlowHasher).
//
// Simplifications, each stated where it is made:
//   - skb->truesize, which the memory limit counts, is Packet.TrueSize, or
//     the packet's length when that is 0 (a split segment: its length).
//   - skb_gso_segment is modelled by lengths: each segment carries the
//     packet's network and transport headers and GSOSize bytes of
//     payload, the last the rest (see splitGSO); a segment's headers are
//     copied with only the IP length fields, IPv4 ID and checksum rewritten.
//   - The flow dissector of the default Hasher reads IPv4, IPv6 with its
//     hop-by-hop, routing, destination-options and fragment headers, and
//     the ports of TCP, UDP, UDP-Lite, SCTP and DCCP (ESP's and AH's SPI);
//     it does not follow tunnels (Linux dissects 6in4's inner header).
//   - Parameters change after New by Change (cake_change on a live qdisc,
//     as tc qdisc change sends it, cake_reconfigure included), and by
//     autorate-ingress's own cake_reconfigure; there is no cake_reset and
//     no per-flow class stats (tc -s class show).
//   - Input Linux never sees (a negative MacLen, a packet of length 0, a
//     GSO packet with no segment count) is Refused with an Event naming
//     the field, not taken.
//
// Behaviour of Linux's worth knowing when reading the tests: a flow's
// COBALT state starts zeroed, rec_inv_sqrt included, so the first time a
// fresh flow is seen over target its drop_next is now and it drops (or
// marks) at its next dequeue still over target; after a flow's count has
// come back down, rec_inv_sqrt is the cache's ~0 and the first drop comes
// an interval (less a nanosecond) later. last_reconfig_time is never set,
// so autorate-ingress reconfigures at every estimate. In triple-isolate a
// flow's quantum is divided by the larger bulk flow count of its two
// hosts: flows that all go to one server are shared per flow, not per
// source host.
//
// The lockstep harness is package cake's (lockstep_test.go, and
// FuzzCakeLockstep in lockstep_fuzz_test.go): it gives cake's Sched and
// the model the same configuration (Params from a cake.Config), the same
// Params.Hasher and Params.Rand, and the same packets and changes at the
// same times, from a start a minute after ktime 0, and compares every
// decision (each Event or departure), the counters tc shows and the
// watchdog. The model imports nothing of package cake's: it is the
// reference, written apart from what it checks.
package caketest
