// Package cake is Linux's CAKE, Common Applications Kept Enhanced
// (net/sched/sch_cake.c, as of Linux 6.12), for gVisor's netstack: a
// deficit-mode shaper that sends exactly its bandwidth without a token
// bucket's burst, flow and host isolation by set-associative hashing,
// COBALT (CoDel and BLUE) in every queue, tins by DSCP (diffserv3,
// diffserv4, diffserv8, precedence, besteffort), an ACK filter, and
// overhead compensation for the link the sandbox's traffic ends up on
// (ATM, PTM, Ethernet, DOCSIS). Issue 29 asks for it: one qdisc a
// sandbox's operator can set with a bandwidth and nothing else and get
// low latency under load, fairness between the sandbox's hosts and flows,
// and the right rate on the real link.
//
// # The pieces
//
// Config is every setting of tc-cake as the kernel holds it after
// cake_change, with DefaultConfig (cake_init's defaults) and Validate
// (every bound Linux and tc have, and a few of ours, each saying so);
// ParseQdisc and Config.String, tc-cake's words in and `tc qdisc show`'s
// words out; single-value parsers for flags; WireLen and
// Config.MemoryLimit, cake's per-packet length and memory arithmetic; and
// Config.Tighten, the rule by which a pod's annotations may change an
// operator's cake.
//
// Sched is the qdisc itself, a qdisc.Shaper on a step clock (every call
// is given the time; nothing reads a clock), each decision as sch_cake
// makes it:
//   - the shaper: a global and a per-tin time_next_packet advanced by each
//     packet's overhead-compensated length times cake_set_rate's ns per
//     byte (<< its shift), and a failsafe clock at 1.5 times the rate;
//     unlimited mode balances the tins by DRR instead. NextEvent is the
//     time Linux arms its watchdog for;
//   - tins by DSCP with Linux's tables, rates, shares and priority rule
//     (the highest tin that is due, else the first due); wash;
//   - the 8-way set-associative hash over 1024 queues a tin, with its way
//     hit, miss and collision counts, and the host table of triple-isolate
//     and the dual modes, whose bulk flow counts divide each flow's
//     quantum (cake_get_flow_quantum, dithered);
//   - DRR++ with new, old and decaying rotations, the sparse, bulk and
//     sparse-wait sets;
//   - COBALT with the cached inverse square root and BLUE, its target and
//     interval raised at low rates (1.5 MTU times), marking ECN-capable
//     packets CE instead of dropping them; its control law scales the
//     interval in 32 bits, as Linux's reciprocal_scale does, so an
//     interval of 4.29s or more (an rtt that long) counts modulo 2^32 ns;
//   - the ACK filter, on and aggressive, with Linux's eligibility rules;
//   - overhead compensation (cake_overhead: each segment of a GSO packet
//     charged as a packet), split-gso (package gso's Split), ingress mode
//     (a drop still advances the shaper), autorate-ingress, and the
//     memory limit, enforced by dropping from the head of the fattest
//     flow of any tin.
//
// autorate-ingress's windows start where Linux's do: at 0 (cake_init
// zeroes last_packet_time, avg_window_begin and last_reconfig_time, and
// ktime 0 is boot), not at the Sched's creation. On a Discipline, 0 is
// the zero of its clock's NowMonotonic. The first packet measures its
// window back to then and, unless it comes within 250ms of 0, retunes
// the rate at once; last_reconfig_time is never set again, as in Linux.
//
// Discipline runs a Sched on a NIC (New) or on the receive path (NewTo)
// in a dispatch lane, as htb does, with Change for cake_change's settings
// in place, and TCStats in `tc -s qdisc show`'s layout (q_cake.c's
// cake_print_xstats).
//
// # Where this differs from Linux
//
// In the configuration:
//   - nat is refused: it asks cake to look a packet's addresses up in
//     conntrack, and the netstack has none (Linux refuses it too on a
//     kernel without conntrack). nonat is taken.
//   - fwmark (other than 0) is refused: packets in the netstack carry no
//     firewall mark for it to read. Nor do they carry an skb priority, so
//     a packet's tin comes from its DSCP alone; and there are no tc
//     filters to override a packet's flow or host (cake_classify).
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
//   - A change of diffserv mode to fewer tins is refused while the tins
//     it removes hold packets (Linux drops them).
//
// In the queue:
//   - A packet's flow hash is pkt.Hash where the stack set one (gVisor's
//     TCP does, per connection, as Linux's skb->hash), else package
//     flowhash's seeded hash of its addresses, protocol and ports; a host
//     is a seeded hash of its address (flowhash.Hosts). Linux's
//     flow_hash_from_keys sorts a flow's addresses; ours does not, which
//     matters to no qdisc that sees one direction.
//   - A packet's memory is its PacketBuffer's (MemSize), not an skb's
//     truesize. The most memory used may pass the limit by the packet
//     that makes cake drop, as in Linux.
//   - The overflow heap is a true max-heap: Linux's cake_heapify compares
//     with the backlog that moved up, so its heap goes wrong and is
//     rebuilt (8192 flows) whenever its top is empty, every few packets
//     under a flood from many hosts; see Sched.drop.
//   - Headers are untrusted and read from a bounded copy (192 bytes from
//     the network header on). DSCP and ECN are written only into a
//     network header the send path parsed (whole, of its version): wash
//     leaves a received packet's DSCP, and COBALT drops a received
//     ECN-capable packet rather than marking it. The ACK filter does not
//     read an IPv4 header whose IHL is below 5 (Linux would).
//   - On the receive path a packet GRO merged is charged (by its lane) as
//     the segments it was on the wire, but cake's overhead compensation
//     counts it as one packet of that length.
//   - BLUE's drops and the quantum's dithering draw from a PCG seeded per
//     queue, not the kernel's random pool.
//   - The min/max network and adjusted lengths tc shows are not truncated
//     to 16 bits.
//   - Statistics: overlimits are the times the lane waited for the
//     shaper.
package cake
