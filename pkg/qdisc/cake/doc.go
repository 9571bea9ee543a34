// Package cake is to be Linux's CAKE, Common Applications Kept Enhanced
// (net/sched/sch_cake.c), for gVisor's netstack: a deficit-mode shaper
// that sends exactly its bandwidth without a token bucket's burst, flow
// and host isolation by set-associative hashing, COBALT (CoDel and BLUE)
// in every queue, tins by DSCP (diffserv3, diffserv4, diffserv8,
// precedence, besteffort), an ACK filter, and overhead compensation for
// the link the sandbox's traffic ends up on (ATM, PTM, Ethernet,
// DOCSIS). Issue 29 asks for it: one qdisc a sandbox's operator can set
// with a bandwidth and nothing else and get low latency under load,
// fairness between the sandbox's hosts and flows, and the right rate on
// the real link.
//
// What is here so far is the contract the core and the runsc flags will
// build on: Config, every setting of tc-cake as the kernel holds it after
// cake_change, with DefaultConfig (cake_init's defaults) and Validate
// (every bound Linux and tc have, and a few of ours, each saying so);
// ParseQdisc and Config.String, tc-cake's words in and `tc qdisc show`'s
// words out; single-value parsers for flags (ParseBandwidth,
// ParseIsolation, ParseDiffserv, ParseAckFilter, ParseATM, ParseRTT,
// ParseOverhead, ParseMPU, ParseMemlimit); WireLen and
// Config.MemoryLimit, cake's per-packet length and memory arithmetic,
// which the core will charge and bound with; and Config.Tighten, the rule
// by which a pod's annotations may change an operator's cake.
//
// Where this differs from Linux (so far, in the configuration):
//   - nat is refused: it asks cake to look a packet's addresses up in
//     conntrack, and the netstack has none (Linux refuses it too on a
//     kernel without conntrack). nonat is taken.
//   - fwmark (other than 0) is refused: packets in the netstack carry no
//     firewall mark for it to read.
//   - Bounds Linux leaves to tc are checked on the Config, so that a
//     Config built in Go meets them too: overhead -64..256 and mpu 0..256
//     (q_cake.c checks only the number after its keyword, not the sum
//     the framing keywords add; here the sum is checked).
//   - What Linux silently changes is refused: a bandwidth below 64
//     bytes/s (cake_set_rate's MIN_RATE runs it at 64 bytes/s), an rtt or
//     target of 0 (cake_change raises them to 1us); and so are some
//     values Linux takes that do nothing useful: a target above the rtt,
//     a memlimit too small for a 64 KiB packet.
//   - MemoryLimit saturates at 2^32-1 where cake_reconfigure's 32-bit
//     arithmetic would wrap (a bandwidth for 4 rtts past 4 GiB, 10240
//     packets of a very large MTU).
//   - ParseQdisc takes two words tc does not: target (the kernel's
//     TCA_CAKE_TARGET, which tc only derives as rtt/20) and bandwidth
//     unlimited (what `tc qdisc show` prints), so that every Config has
//     words that read back to it.
package cake
