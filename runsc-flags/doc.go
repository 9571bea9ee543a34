// Package runscflags is netqdisc's runtime configuration, as a sandbox
// runtime (runsc or one like it) offers it: runsc's qdisc flags and the
// Linux knobs runsc lacks, OCI annotations that let a container author make
// shaping stricter (dev.gvisor.flag.* and Kubernetes' bandwidth
// annotations), and the factories that build a NIC's qdisc
// (NewQueueingDiscipline) and receive shaper (NewIngress).
//
// Flags is the table of the flags: each one's name, unit, default, Config
// field, annotation rule, Linux setting and bound, the direction whose
// ceiling it sets (Ceiling) and the Kubernetes annotation that sets it
// (Kube). Registration, parsing, Args, the per-flag policy, each
// direction's tbf.Config, what `runsc qdisc change` may change, Kubernetes'
// bandwidth annotations and the flag reference, docs/flags.md
// (MarkdownTable), are made from it, and a runtime asks it (Owns,
// MayAnnotate) rather than list the flags again. Rates
// and sizes take runsc's bare numbers (bytes/s, bytes) or tc's units
// ("10mbit", "64kb"; package rate).
//
// NIC and Change are `runsc qdisc`: a running sandbox's NICs, each with
// the Config in force, shown as `tc -s qdisc show` shows them (Show) and
// their ceilings changed in place, all NICs or none (live.go). NIC.State
// and NIC.Restore carry them across a checkpoint (checkpoint.go).
//
// # The annotation policy
//
// Flags belong to the operator; annotations belong to whoever writes the
// container spec, who may be untrusted. Without --allow-flag-override, an
// annotation may only make shaping stricter, as its flag's Rule says.
// ApplyAnnotations is the one path by which anything the sandbox's side
// writes meets the policy: a pod's annotations, and a checkpoint's saved
// changes, which the sandbox's Sentry wrote (NIC.Restore holds them to
// the NIC as built on the restoring host, its Config the ceiling).
// What the table cannot say:
//
//   - The ceilings are the operator's flag values, never values set by
//     earlier annotations, so the result does not depend on the order of
//     the annotations (upstream runsc compares against the Config as it
//     changes, and accepts 0, which in runsc's flags unsets a ceiling).
//   - A set is applied atomically: if any annotation is refused, the
//     Config is unchanged; the error names the annotation, its value, the
//     ceiling and --allow-flag-override. The result must Validate: a pod
//     that picks tbf where the operator gave no rate and burst gives them.
//   - A tbf's limit and latency (each direction's) that the operator left
//     unset mean the default queue, 1000 full-size packets
//     (DefaultQueueBytes), not an unbounded one: an annotation may give a
//     limit no larger, or a latency whose limit (rate*latency + burst, at
//     the result's rate and burst) is no larger. A Kubernetes bandwidth's
//     25 ms latency is held to the same (below).
//   - qdisc: tbf only ever delays or drops what the qdisc it replaces
//     would send; fq_codel may replace fifo or none, which have no ceiling
//     for it to remove, but not tbf. A tbf child of fq_codel replaces the
//     tbf's byte FIFO, so Validate refuses it beside a tbf limit or
//     latency, which fq_codel's own limits could exceed.
//   - cake (--qdisc-cake, --qdisc-ingress-cake): an annotation gives
//     tc-cake's words for the whole of cake, held to the operator's by
//     cake.Config.Tighten (a lower bandwidth, never unlimited under the
//     operator's; the modes that only order or drop the pod's own packets
//     free). A pod cannot select cake in place of another qdisc. The
//     flags of cake's settings one each (--qdisc-cake-bandwidth, ...,
//     read after --qdisc-cake's words) are held the same way: cake with
//     the setting given must pass Tighten against the operator's, and the
//     result is written back as --qdisc-cake's words alone.
//   - htb (--qdisc-htb, --qdisc-ingress-htb): an annotation is a change
//     merged into the operator's tree, held to it by htb.Script.Tighten
//     (htb's Kind.Tighten): it must shape every packet at least as
//     tightly, and the classes it hangs from a class share it (rates,
//     bursts and cbursts adding up to the class's, one borrower, what it
//     leaves unset filled in as shares), since Linux's htb serves a class
//     within its own rate without asking its parent. A runtime runs the
//     merged tree (see runsc.go), never the annotation alone.
//   - kubernetes.io/egress-bandwidth and kubernetes.io/ingress-bandwidth
//     (bits/s, Kubernetes quantities) ask for the same: egress selects tbf
//     (where htb is in force, the tree is fitted under the bandwidth,
//     htb.Fit; where cake is, its bandwidth is lowered), and each sets its
//     direction's rate, a burst of 10 ms of it (at least 64 KiB + 14, the
//     largest host-GSO packet) and the CNI bandwidth plugin's 25 ms
//     latency (where the operator left the queue unset, no longer than
//     the default queue holds: 2.1 ms at 1 Gbit/s), each only where
//     smaller than what is in force. Above the operator's rate one is not refused, since it is a
//     limit, not a reservation: the pod gets the operator's rate and a
//     notice (Notices). A dev.gvisor.flag.* above a ceiling is refused.
//
// With --allow-flag-override, which no annotation can set, annotations may
// set any flag this package owns (Owns); the result is validated all the
// same. Annotations for other flags, and keys without the prefix, are the
// runtime's.
package runscflags
