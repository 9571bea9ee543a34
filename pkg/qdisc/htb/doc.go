// Package htb is Linux's Hierarchical Token Bucket (net/sched/sch_htb.c)
// for gVisor's netstack: classes in a tree, each with a rate it is
// guaranteed and a ceil it may borrow up to from its ancestors, packets
// put in a leaf class by filters (package classify: by address, protocol,
// port, DSCP), and any qdisc as a leaf's queue. It is how a sandbox caps
// what it sends to the internet and leaves its cluster alone, as `tc`
// does on a host with htb classes keyed by address.
//
// The scheduling is sch_htb's, decision for decision (a model written
// apart from this code, package htbtest, holds it to that to the
// nanosecond): two buckets per class in ns of credit (tokens against the
// rate, ctokens against the ceil, at most mbuffer, 60 s, in debt); a
// class's mode — can send (tokens >= 0), may borrow (tokens < 0 <=
// ctokens), cannot send (ctokens < 0) — changing at exactly 0; every
// packet charged to its leaf's ceil and every ancestor's, and to the rate
// of the ancestor it borrowed from and those above it (htb_charge_class:
// lends and borrows); service by level (classes within their own rate
// first, then borrowers from the nearest ancestor up), then by prio, then
// by deficit round robin with each leaf's quantum (rate/r2q clamped to
// 1000..200000 bytes, with Linux's warning, or given); the direct queue,
// unshaped, served before everything, for packets no filter nor default
// class places (with no default class that is all of them: the pitfall
// of kubernetes#25092); and the watchdog armed for the next mode change.
// Tree is that scheduler, a qdisc.Shaper: a dispatch lane drains it and
// waits for its NextEvent, and a packet that makes an idle class active
// makes the lane look again at once, as Linux runs its qdisc after every
// enqueue.
//
// tc's words for one piece (ParseQdisc, ParseClass, ParseFilter) and for
// a whole qdisc, a Script of statements (ParseScript), build a Config;
// Kind registers htb with package qdisc, its words a Script.
//
// Where this differs from Linux:
//   - Buckets' depths are TimeNS(burst) in ns, as tbf's, not tc's psched
//     ticks; a packet costs rate.TimeNS of its length, overhead and mpu
//     included (psched_l2t_ns with a 64-bit multiplier).
//   - Late wake-ups are caught up, up to a slack: a dequeue that comes
//     after the event it waited for dequeues at the event's time and goes
//     on from there (see dequeueCatchingUp), so the timer's lateness,
//     longer than a small bucket at a high rate lasts, does not cost a
//     class its rate. Linux's hrtimer is rarely late; Go's timers are. A
//     wake-up later than Config.Slack (50 ms by default) replays
//     only the last Slack, so a class never sends back to back more than
//     its cburst and Slack of its ceil, however late the timer; the time
//     before is lost, as in Linux.
//   - Every event due is applied in one dequeue (no two-jiffy limit and
//     no "too many events" work item), and the event queues are sorted
//     slices, not rb-trees: a sandbox's tree is a handful of classes.
//   - Filters (package classify) are the root chain and chains attached
//     to inner classes, walked as htb_classify walks them (Config.Chains),
//     but a configuration where a packet could loop among chains or pass
//     more than MaxDepth inner classes is refused, not run with packets
//     dropped. A filter with no match words is tc's matchall: it takes
//     malformed packets too. No skb->priority selection.
//   - Giants counts packets longer than the class's burst (they overdraw
//     the bucket in one charge); Linux's counter is always 0.
//   - A class's drops are its leaf qdisc's (refused and dropped by its own
//     policy); Linux's count the refusals only.
//   - The tree is built whole from a Config: classes are not added or
//     deleted on a running qdisc, only changed in place (ChangeClass,
//     htb_change_class's semantics).
package htb
