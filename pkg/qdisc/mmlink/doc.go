// Package mmlink is a trace-driven link as mahimahi's mm-link has it
// (src/frontend/link_queue.cc): the link can send only at the times a
// trace lists, each line of the trace one delivery opportunity for one
// MTU-sized packet, and the trace repeats when it ends. A sandbox's
// traffic then meets the capacity of a cellular network as a user saw it
// (a trace recorded with mahimahi's tools, or one of mahimahi's own), or
// of one the project generates (package tracegen: "lte", "3g").
//
// # What is faithful to mahimahi
//
//   - The trace: mahimahi's format and its checks (a whole number of ms
//     a line, none below the line above, no empty line, the last above
//     0), repeating with the last time as its period.
//   - The opportunities: each carries OpportunityBytes (mahimahi's
//     PACKET_SIZE, 1504) of the packets queued before it, a packet
//     costing its IP bytes and mahimahi's 4-byte TUN header
//     (PacketOverhead); a packet that does not fit is carried across the
//     opportunities that follow (mahimahi's packet in transit), and
//     leaves at the one that carries its last byte; an opportunity's
//     bytes that find no packet queued are lost.
//   - The time of a departure: exactly the opportunity's, on the lane's
//     clock (the lane waits for it, Queue.NextEvent). An opportunity at
//     the very time a packet arrives is not the packet's: mahimahi runs
//     its link up to now before it queues (read_packet's rationalize).
//   - The queue: mahimahi's droptail, its packets=N as limit N and its
//     bytes=N as bytes N, counting the packets waiting (not the one in
//     transit) and their bytes as the opportunities count them.
//
// # Where it departs from mahimahi, and why
//
//   - The queue is never unbounded: mahimahi's default queue is
//     infinite, but a sandbox's senders may be untrusted, so limit is
//     DefaultLimit where not given (tc's txqueuelen) and at most
//     MaxLimit. drophead, codel and pie are not offered.
//   - Time is the lane's clock in ns, not mahimahi's ms: the trace
//     starts when the qdisc is made (mahimahi's base timestamp), and a
//     packet arriving before an opportunity, by any fraction of a ms,
//     may take it. On whole ms this is mahimahi's rule exactly.
//   - A packet larger than an opportunity is carried across several
//     (mahimahi refuses a packet above 1504 bytes and exits). On the
//     send path a host-GSO packet is cut into its segments first, each
//     leaving at its own opportunity; on the receive path a GRO
//     aggregate is charged as its segments and leaves whole, at its last
//     segment's opportunity.
//   - A ceiling (a tbf's buckets) may be put over the link in place
//     (SetCeiling): a packet is booked from the time it left the link.
//     mahimahi has none; it is what a tbf grafted under it would do.
//   - --once (stop after one pass of the trace) is not offered; the
//     trace always repeats. mahimahi's logs and graphs are not made;
//     `tc -s`'s counters and the opportunities used are shown instead.
//
// # Its words
//
//	trace NAME|FILE [limit PACKETS] [bytes BYTES]
//
// A built-in trace's name ("lte", "3g") is made where it is read; any
// other word is a file's path, read when the words are (at most
// MaxTraceBytes and MaxTraceLines), relative to the reader's working
// directory. Under runsc the words are read again where the NICs are
// built, in the sandbox's boot process, which has by then moved into an
// empty root (runsc's setUpChroot) and reads no host file: there, give a
// built-in. A pod may not change the trace (Kind.Tighten is nil).
package mmlink
