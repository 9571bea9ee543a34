package runscflags

import (
	"math"
	"slices"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Flag names.
const (
	FlagQDisc              = "qdisc"
	FlagTBFRate            = "qdisc-tbf-rate"
	FlagTBFBurst           = "qdisc-tbf-burst"
	FlagTBFPeakRate        = "qdisc-tbf-peakrate"
	FlagTBFMTU             = "qdisc-tbf-mtu"
	FlagTBFLimit           = "qdisc-tbf-limit"
	FlagTBFLatency         = "qdisc-tbf-latency"
	FlagTBFPacketRate      = "qdisc-tbf-pkt-rate"
	FlagTBFPacketBurst     = "qdisc-tbf-pkt-burst"
	FlagIngressRate        = "qdisc-ingress-rate"
	FlagIngressBurst       = "qdisc-ingress-burst"
	FlagIngressLimit       = "qdisc-ingress-limit"
	FlagIngressLatency     = "qdisc-ingress-latency"
	FlagIngressPacketRate  = "qdisc-ingress-pkt-rate"
	FlagIngressPacketBurst = "qdisc-ingress-pkt-burst"
	FlagTBFChild           = "qdisc-tbf-child"
	FlagFQCoDelLimit       = "qdisc-fq-codel-limit"
	FlagFQCoDelFlows       = "qdisc-fq-codel-flows"
	FlagFQCoDelTarget      = "qdisc-fq-codel-target"
	FlagFQCoDelInterval    = "qdisc-fq-codel-interval"
	FlagFQCoDelQuantum     = "qdisc-fq-codel-quantum"
	FlagFQCoDelMemLimit    = "qdisc-fq-codel-memory-limit"
	FlagFQCoDelDropBatch   = "qdisc-fq-codel-drop-batch"
	FlagFQCoDelECN         = "qdisc-fq-codel-ecn"
	FlagAllowFlagOverride  = "allow-flag-override"
	FlagHTB                = "qdisc-htb"
	FlagIngressHTB         = "qdisc-ingress-htb"
	FlagCake               = "qdisc-cake"
	FlagIngressCake        = "qdisc-ingress-cake"
	FlagCakeBandwidth      = "qdisc-cake-bandwidth"
	FlagCakeIsolation      = "qdisc-cake-isolation"
	FlagCakeDiffserv       = "qdisc-cake-diffserv"
	FlagCakeAckFilter      = "qdisc-cake-ack-filter"
	FlagCakeRTT            = "qdisc-cake-rtt"
	FlagCakeOverhead       = "qdisc-cake-overhead"
	FlagCakeMemlimit       = "qdisc-cake-memlimit"
	FlagCakeWash           = "qdisc-cake-wash"
	FlagCakeSplitGSO       = "qdisc-cake-split-gso"
)

// Flag is one flag of the table: everything registration, parsing, Args,
// the annotation policy, Validate's range checks and the docs know of it.
type Flag struct {
	// Name is the flag's name, without dashes; dev.gvisor.flag.<Name> is
	// its annotation.
	Name string
	// Kind is the value's unit and syntax.
	Kind Kind
	// Unit is what a count counts ("packets"); other kinds say their own.
	Unit string
	// Default is the flag's default as flag text ("fifo", "0", "0s").
	Default string
	// Unset says what the default means where that is not the value
	// itself ("not shaped", "Linux's 10240"), for the docs.
	Unset string
	// Example is a value to show ("50ms"), for errors and the docs.
	Example string
	// Usage is the flag's help text.
	Usage string
	// Annotation is what dev.gvisor.flag.<Name> may do without
	// --allow-flag-override.
	Annotation Rule
	// Linux is the setting of Linux's qdisc the flag stands for, and its
	// bound.
	Linux Linux
	// Ceiling is the direction whose ceiling, a tbf, the flag sets, as
	// the setting tc calls Linux.Param: such a flag may change on a
	// running sandbox (runsc qdisc change). NotCeiling for the flags that
	// shape the qdisc itself.
	Ceiling Ceiling
	// Kube is the Kubernetes bandwidth annotation that sets the flag
	// (AnnotationKubeEgress, AnnotationKubeIngress), "" for none: each
	// sets its direction's rate, burst, and limit or latency, as
	// Linux.Param says, and the egress one selects --qdisc=tbf.
	Kube string

	// field returns a pointer to the Config field the flag sets:
	// *QueueingDiscipline, *string, *uint64, *time.Duration or *bool. It
	// is the one place a flag names its field, and the compiler checks
	// it.
	field func(*Config) any
	// negated: the bool field holds the flag's negation (FQNoECN, tc's
	// noecn, for --qdisc-fq-codel-ecn).
	negated bool
	// runtime: the runtime's own switch (--allow-flag-override), which
	// RegisterQDiscFlags, Owns and Args leave out.
	runtime bool
	// classes is the direction whose htb script (KindHTB) the flag is:
	// `runsc qdisc change` changes its classes in place.
	classes Ceiling
	// cakeWords turns the value of one of cake's settings (KindCakeKnob)
	// into tc-cake's words ("100mbit" -> "bandwidth 100mbit"; "" -> ""),
	// or says why it is not one.
	cakeWords func(string) (string, error)
}

// Permit is what an annotation may do with a flag.
type Permit int

const (
	// Never: no annotation may set the flag, even with
	// --allow-flag-override.
	Never Permit = iota
	// OperatorOnly: the flag bounds nothing, so it is the operator's;
	// annotations may set it only with --allow-flag-override.
	OperatorOnly
	// Select: an annotation may select the values Rule.Choices lists.
	Select
	// Lower: an annotation may set a valid, non-zero value no greater than
	// the ceiling (Rule.Unset says what it is where the operator left the
	// flag unset).
	Lower
	// Tighten: an annotation may change an htb script's classes so that
	// every packet is shaped at least as tightly (see tighten).
	Tighten
)

// Unset is the ceiling of a Lower flag the operator left unset.
type Unset int

const (
	// NoCeiling: any valid value (a tbf knob: unset means no such bound).
	NoCeiling Unset = iota
	// DefaultCeiling: Linux's default, Rule.Default (an fq_codel knob:
	// unset means the default, not unbounded).
	DefaultCeiling
)

// Rule is a flag's annotation policy without --allow-flag-override.
type Rule struct {
	Permit Permit
	// Choices are the values a Select flag may be set to.
	Choices []Choice
	// Unset and Default are a Lower flag's ceiling where the operator set
	// none; Default is in the field's units (bytes, packets, ns).
	Unset   Unset
	Default uint64
	// Note is what else the docs say of it.
	Note string
}

// Choice is a value a Select flag may be set to, in place of any value of
// the operator's or, when Over is not empty, only in place of those.
type Choice struct {
	Value string
	Over  []string
}

// Linux is the setting of Linux's qdisc a flag stands for.
type Linux struct {
	// Qdisc and Param are the qdisc and tc's name of its parameter
	// ("tbf", "burst"), which tbf's and fqcodel's ConfigErrors use as
	// their Field.
	Qdisc, Param string
	// Max is the largest value Linux takes, in the field's units (0: the
	// field's type is the bound), and Bound says why.
	Max   uint64
	Bound string
	// Checked: the qdisc's own Check refuses values past Max, naming
	// Param; Validate refuses only what a 32-bit field cannot hold.
	Checked bool
}

const (
	rateHelp = "bytes/s as a bare number (as runsc), or with tc's units: 10mbit, 1gbit, 125kbps"
	pktHelp  = "packets/s as a bare number, or with units: 20000pps, 20kpps, 1mpps"
	sizeHelp = "bytes as a bare number (as runsc), or with tc's units: 64kb, 1mb, 1mbit"
)

var (
	lower        = Rule{Permit: Lower}
	operatorOnly = Rule{Permit: OperatorOnly}
)

// lowerDefault is the rule of an fq_codel knob whose default is a ceiling.
func lowerDefault[T uint64 | time.Duration](def T) Rule {
	return Rule{Permit: Lower, Unset: DefaultCeiling, Default: uint64(def)}
}

// Flags is the table, in the order Args gives them. It is read-only by
// convention.
var Flags = slices.Concat(shapingRows, fqCoDelRows, classRows)

// shapingRows are the flags of the qdisc, tbf's ceilings and the ingress
// shaper's, and tbf's child: the table's head.
var shapingRows = []Flag{
	{
		Name: FlagQDisc, Kind: KindQDisc, field: func(c *Config) any { return &c.QDisc },
		Default:    "fifo",
		Usage:      "queueing discipline on the sandbox's non-loopback NICs: none, fifo, tbf, fq_codel, htb (classes: --qdisc-htb) or cake (--qdisc-cake).",
		Annotation: Rule{Permit: Select, Choices: []Choice{{Value: "tbf"}, {Value: "fq_codel", Over: []string{"none", "fifo", "fq_codel"}}}},
		Linux:      Linux{Qdisc: "the root qdisc"},
		Kube:       AnnotationKubeEgress,
	},
	{
		Name: FlagTBFRate, Kind: KindRate, field: func(c *Config) any { return &c.TBFRate },
		Default: "0", Unset: "unset; required with `--qdisc=tbf`",
		Usage:      "tbf: egress rate limit; " + rateHelp + ". Required with --qdisc=tbf.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "tbf", Param: "rate", Bound: "TCA_TBF_RATE64 is a u64"},
		Ceiling:    EgressCeiling,
		Kube:       AnnotationKubeEgress,
	},
	{
		Name: FlagTBFBurst, Kind: KindSize, field: func(c *Config) any { return &c.TBFBurst },
		Default: "0", Unset: "unset; required with `--qdisc=tbf`",
		Usage:      "tbf: bucket depth, the most sent at once; " + sizeHelp + ". Required with --qdisc=tbf; at least the NIC's MTU plus header.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "tbf", Param: "burst", Max: math.MaxUint32, Bound: "4 GiB: TCA_TBF_BURST is a u32"},
		Ceiling:    EgressCeiling,
		Kube:       AnnotationKubeEgress,
	},
	{
		Name: FlagTBFPeakRate, Kind: KindRate, field: func(c *Config) any { return &c.TBFPeakRate },
		Default: "0", Unset: "unset",
		Usage:      "tbf: optional peak rate of a second bucket that paces bursts, above --qdisc-tbf-rate; " + rateHelp + ".",
		Annotation: Rule{Permit: Lower, Note: "may add a peak rate (with `--qdisc-tbf-mtu`)"},
		Linux:      Linux{Qdisc: "tbf", Param: "peakrate", Bound: "TCA_TBF_PRATE64 is a u64"},
		Ceiling:    EgressCeiling,
	},
	{
		Name: FlagTBFMTU, Kind: KindSize, field: func(c *Config) any { return &c.TBFMTU },
		Default: "0", Unset: "unset",
		Usage:      "tbf: the peak bucket's depth (tc's mtu/minburst), required with --qdisc-tbf-peakrate; " + sizeHelp + ".",
		Annotation: lower,
		Linux:      Linux{Qdisc: "tbf", Param: "mtu", Max: math.MaxUint32, Bound: "4 GiB: TCA_TBF_PBURST is a u32"},
		Ceiling:    EgressCeiling,
	},
	{
		Name: FlagTBFLimit, Kind: KindSize, field: func(c *Config) any { return &c.TBFLimit },
		Default: "0", Unset: "1000 full-size packets",
		Usage:      "tbf: most bytes queued; " + sizeHelp + ". Default: 1000 full-size packets. Excludes --qdisc-tbf-latency.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "tbf", Param: "limit", Max: math.MaxUint32, Bound: "4 GiB: tc_tbf_qopt.limit is a u32"},
		Ceiling:    EgressCeiling,
		Kube:       AnnotationKubeEgress,
	},
	{
		Name: FlagTBFLatency, Kind: KindDuration, field: func(c *Config) any { return &c.TBFLatency },
		Default: "0s", Unset: "unset", Example: "50ms",
		Usage:      "tbf: most time a packet may wait (limit = rate*latency + burst), e.g. 50ms. Excludes --qdisc-tbf-limit.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "tbf", Param: "latency", Bound: "the limit it gives, rate*latency + burst, is a u32", Checked: true},
		Ceiling:    EgressCeiling,
		Kube:       AnnotationKubeEgress,
	},
	{
		Name: FlagTBFPacketRate, Kind: KindPacketRate, field: func(c *Config) any { return &c.TBFPacketRate },
		Default: "0", Unset: "unset: no packet ceiling",
		Usage:      "tbf: packets-per-second ceiling, a bucket beside the bytes' (a packet leaves when both allow it); " + pktHelp + ". Needs --qdisc-tbf-pkt-burst; with it --qdisc-tbf-rate may be unset.",
		Annotation: Rule{Permit: Lower, Note: "may add a packet ceiling where the operator has none"},
		Linux:      Linux{Qdisc: "police", Param: "pkt_rate", Max: tbf.MaxPacketRate, Bound: "ours: a packet costs at least 1 ns (TCA_POLICE_PKTRATE64 is a u64)"},
		Ceiling:    EgressCeiling,
	},
	{
		Name: FlagTBFPacketBurst, Kind: KindCount, Unit: "packets", field: func(c *Config) any { return &c.TBFPacketBurst },
		Default: "0", Unset: "unset; required with `--qdisc-tbf-pkt-rate`",
		Usage:      "tbf: the packet bucket's depth, the most packets sent at once. Required with --qdisc-tbf-pkt-rate.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "police", Param: "pkt_burst", Max: math.MaxUint32, Bound: "ours: 32 bits (TCA_POLICE_PKTBURST64 is a u64)"},
		Ceiling:    EgressCeiling,
	},
	{
		Name: FlagIngressRate, Kind: KindRate, field: func(c *Config) any { return &c.IngressRate },
		Default: "0", Unset: "unset: not shaped",
		Usage:      "ingress: rate limit on what the sandbox receives (a tbf on the receive path, as Linux's ifb); " + rateHelp + ". Default: not shaped.",
		Annotation: Rule{Permit: Lower, Note: "may add an ingress shaper where the operator has none"},
		Linux:      Linux{Qdisc: "ifb tbf", Param: "rate", Bound: "TCA_TBF_RATE64 is a u64"},
		Ceiling:    IngressCeiling,
		Kube:       AnnotationKubeIngress,
	},
	{
		Name: FlagIngressBurst, Kind: KindSize, field: func(c *Config) any { return &c.IngressBurst },
		Default: "0", Unset: "unset; required with `--qdisc-ingress-rate`",
		Usage:      "ingress: bucket depth; " + sizeHelp + ". Required with --qdisc-ingress-rate; at least the NIC's MTU plus header.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "ifb tbf", Param: "burst", Max: math.MaxUint32, Bound: "4 GiB: TCA_TBF_BURST is a u32"},
		Ceiling:    IngressCeiling,
		Kube:       AnnotationKubeIngress,
	},
	{
		Name: FlagIngressLimit, Kind: KindSize, field: func(c *Config) any { return &c.IngressLimit },
		Default: "0", Unset: "1000 full-size packets",
		Usage:      "ingress: most bytes queued; " + sizeHelp + ". Default: 1000 full-size packets. Excludes --qdisc-ingress-latency.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "ifb tbf", Param: "limit", Max: math.MaxUint32, Bound: "4 GiB: tc_tbf_qopt.limit is a u32"},
		Ceiling:    IngressCeiling,
		Kube:       AnnotationKubeIngress,
	},
	{
		Name: FlagIngressLatency, Kind: KindDuration, field: func(c *Config) any { return &c.IngressLatency },
		Default: "0s", Unset: "unset", Example: "25ms",
		Usage:      "ingress: most time a received packet may wait, e.g. 25ms. Excludes --qdisc-ingress-limit.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "ifb tbf", Param: "latency", Bound: "the limit it gives, rate*latency + burst, is a u32", Checked: true},
		Ceiling:    IngressCeiling,
		Kube:       AnnotationKubeIngress,
	},
	{
		Name: FlagIngressPacketRate, Kind: KindPacketRate, field: func(c *Config) any { return &c.IngressPacketRate },
		Default: "0", Unset: "unset: no packet ceiling",
		Usage:      "ingress: packets-per-second ceiling on what the sandbox receives; " + pktHelp + ". Needs --qdisc-ingress-pkt-burst; with it --qdisc-ingress-rate may be unset.",
		Annotation: Rule{Permit: Lower, Note: "may add a packet ceiling where the operator has none"},
		Linux:      Linux{Qdisc: "ifb police", Param: "pkt_rate", Max: tbf.MaxPacketRate, Bound: "ours: a packet costs at least 1 ns (TCA_POLICE_PKTRATE64 is a u64)"},
		Ceiling:    IngressCeiling,
	},
	{
		Name: FlagIngressPacketBurst, Kind: KindCount, Unit: "packets", field: func(c *Config) any { return &c.IngressPacketBurst },
		Default: "0", Unset: "unset; required with `--qdisc-ingress-pkt-rate`",
		Usage:      "ingress: the packet bucket's depth. Required with --qdisc-ingress-pkt-rate.",
		Annotation: lower,
		Linux:      Linux{Qdisc: "ifb police", Param: "pkt_burst", Max: math.MaxUint32, Bound: "ours: 32 bits (TCA_POLICE_PKTBURST64 is a u64)"},
		Ceiling:    IngressCeiling,
	},
	{
		Name: FlagTBFChild, Kind: KindChild, field: func(c *Config) any { return &c.TBFChild },
		Default: "fifo", Unset: "the tbf's byte FIFO",
		Usage: "tbf: the queue under the bucket: fifo (a byte FIFO, bounded by --qdisc-tbf-limit or -latency) or fq_codel (flow queues with CoDel: low latency for sparse flows under load; set no tbf limit or latency).",
		Annotation: Rule{Permit: Select, Choices: []Choice{{Value: ChildFQCoDel}, {Value: "fifo", Over: []string{"fifo"}}},
			Note: "refused where the tbf has a limit or latency, which fq_codel's limits would replace"},
		Linux: Linux{Qdisc: "the tbf's child qdisc"},
	},
}

// classRows are the flags of htb's classes and of cake, after
// fqCoDelRows in the table.
var classRows = []Flag{
	{
		Name: FlagHTB, Kind: KindHTB, field: func(c *Config) any { return &c.HTB }, classes: EgressCeiling,
		Default: "", Unset: "unset; required with `--qdisc=htb`",
		Example:    "class root classid 1:1 rate 10mbit",
		Usage:      "htb: classes and filters for --qdisc=htb, in tc's words, statements separated by ';': qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:20 rate 10mbit quota 50gb per 24h; filter dst 10.0.0.0/8 classid 1:10.",
		Annotation: Rule{Permit: Tighten, Note: "class statements that lower a class's rate, ceil, burst or cburst, add or lower a quota (`class classid 1:20 ceil 5mbit`), or split a leaf into classes no looser with a chain of filters under it ending in a catch-all (`class parent 1:20 classid 1:21 rate 1mbit; filter parent 1:20 classid 1:21`); the root filters and the default stay the operator's"},
		Linux:      Linux{Qdisc: "htb"},
	},
	{
		Name: FlagIngressHTB, Kind: KindHTB, field: func(c *Config) any { return &c.IngressHTB }, classes: IngressCeiling,
		Default: "", Unset: "not shaped by classes",
		Example:    "class root classid 1:1 rate 10mbit",
		Usage:      "htb on what the sandbox receives: classes and filters as --qdisc-htb, whose dst matches the sender. Excludes --qdisc-ingress-rate.",
		Annotation: Rule{Permit: Tighten, Note: "as `--qdisc-htb`"},
		Linux:      Linux{Qdisc: "htb", Param: "(on ifb)"},
	},
	{
		Name: FlagCake, Kind: KindCake, field: func(c *Config) any { return &c.Cake },
		Default: "", Unset: "cake's defaults: unlimited diffserv3 triple-isolate",
		Example:    "bandwidth 100mbit dual-dsthost",
		Usage:      "cake: its settings for --qdisc=cake, in tc-cake's words: bandwidth 100mbit (or unlimited), dual-dsthost (client fairness on a server) or another isolation mode, diffserv4, ack-filter, rtt 50ms, memlimit 32mb, overhead and framing (ethernet, docsis, ...).",
		Annotation: Rule{Permit: Tighten, Note: "tc-cake's words for the whole of cake, which may only make it stricter (cake.Config.Tighten): a lower bandwidth, never unlimited under an operator's bandwidth; more overhead, mpu or framing; a smaller memlimit; ingress on; the modes that only order or drop the pod's own packets (diffserv, isolation, ack-filter, wash, split-gso, rtt) free"},
		Linux:      Linux{Qdisc: "cake"},
	},
	{
		Name: FlagCakeBandwidth, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeBandwidth }, cakeWords: cakeBandwidthWords,
		Default: "", Unset: "--qdisc-cake's (unlimited)", Example: "100mbit",
		Usage:      "cake: the shaper's rate, tc-cake's bandwidth: " + rateHelp + "; or unlimited. Overrides --qdisc-cake's; runsc qdisc change changes it in place.",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "bandwidth"},
	},
	{
		Name: FlagCakeIsolation, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeIsolation }, cakeWords: cakeWordOf(func(s string) error { _, err := cake.ParseIsolation(s); return err }),
		Default: "", Unset: "--qdisc-cake's (triple-isolate)", Example: "dual-dsthost",
		Usage:      "cake: flow isolation, tc-cake's word: flowblind, srchost, dsthost, hosts, flows, dual-srchost, dual-dsthost (fair between clients on a server) or triple-isolate.",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "isolation"},
	},
	{
		Name: FlagCakeDiffserv, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeDiffserv }, cakeWords: cakeWordOf(func(s string) error { _, err := cake.ParseDiffserv(s); return err }),
		Default: "", Unset: "--qdisc-cake's (diffserv3)", Example: "diffserv4",
		Usage:      "cake: tins, tc-cake's word: besteffort, diffserv3, diffserv4, diffserv8 or precedence.",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "diffserv"},
	},
	{
		Name: FlagCakeAckFilter, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeAckFilter }, cakeWords: cakeWordOf(func(s string) error { _, err := cake.ParseAckFilter(s); return err }),
		Default: "", Unset: "--qdisc-cake's (no-ack-filter)", Example: "ack-filter",
		Usage:      "cake: the ACK filter, tc-cake's word: no-ack-filter, ack-filter or ack-filter-aggressive.",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "ack-filter"},
	},
	{
		Name: FlagCakeRTT, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeRTT }, cakeWords: cakeRTTWords,
		Default: "", Unset: "--qdisc-cake's (100ms)", Example: "50ms",
		Usage:      "cake: the round trip time COBALT is tuned for, tc-cake's rtt: a time (50ms, 300us) or a preset (datacentre, lan, metro, regional, internet, oceanic, satellite, interplanetary).",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "rtt"},
	},
	{
		Name: FlagCakeOverhead, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeOverhead }, cakeWords: cakeOverheadWords,
		Default: "", Unset: "--qdisc-cake's (raw)", Example: "ethernet",
		Usage:      "cake: overhead compensation in tc-cake's words: a bare number of bytes (tc's overhead), or framing words only: a keyword (ethernet, docsis, pppoe-ptm, bridged-ptm, conservative, ...), raw, overhead N, mpu N, atm, ptm, noatm (\"overhead 38 mpu 84\").",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "overhead"},
	},
	{
		Name: FlagCakeMemlimit, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeMemlimit }, cakeWords: cakePrefixWords("memlimit"),
		Default: "", Unset: "--qdisc-cake's (cake's from the rate)", Example: "32mb",
		Usage:      "cake: most memory the queued packets take, tc-cake's memlimit: bytes as a bare number, or with tc's units: 32mb, 4096kb.",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "memlimit"},
	},
	{
		Name: FlagCakeWash, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeWash }, cakeWords: cakeBoolWords("wash", "nowash"),
		Default: "", Unset: "--qdisc-cake's (nowash)", Example: "true",
		Usage:      "cake: clear the DSCP of what it sends, tc-cake's wash: true (wash) or false (nowash).",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "wash"},
	},
	{
		Name: FlagCakeSplitGSO, Kind: KindCakeKnob, field: func(c *Config) any { return &c.CakeSplitGSO }, cakeWords: cakeBoolWords("split-gso", "no-split-gso"),
		Default: "", Unset: "--qdisc-cake's (split-gso)", Example: "false",
		Usage:      "cake: cut GSO packets into segments, tc-cake's split-gso: true (split-gso) or false (no-split-gso).",
		Annotation: cakeKnobRule,
		Linux:      Linux{Qdisc: "cake", Param: "split-gso"},
	},
	{
		Name: FlagIngressCake, Kind: KindCake, field: func(c *Config) any { return &c.IngressCake },
		Default: "", Unset: "not shaped by cake",
		Example:    "bandwidth 20mbit dual-srchost",
		Usage:      "cake on what the sandbox receives, in tc-cake's words as --qdisc-cake, with cake's ingress keyword (what it drops still counts). Excludes --qdisc-ingress-rate and --qdisc-ingress-htb.",
		Annotation: Rule{Permit: Tighten, Note: "as `--qdisc-cake`"},
		Linux:      Linux{Qdisc: "cake", Param: "(on ifb)"},
	},
	{
		Name: FlagAllowFlagOverride, Kind: KindBool, field: func(c *Config) any { return &c.AllowFlagOverride }, runtime: true,
		Default:    "false",
		Usage:      "allow OCI annotations (dev.gvisor.flag.*) to set any qdisc flag, not only to tighten shaping.",
		Annotation: Rule{Permit: Never, Note: "it is the operator's switch that turns this policy off"},
	},
}

// byName indexes Flags.
var byName = func() map[string]*Flag {
	m := make(map[string]*Flag, len(Flags))
	for i := range Flags {
		m[Flags[i].Name] = &Flags[i]
	}
	return m
}()

// lookup returns the flag called name, or nil.
func lookup(name string) *Flag { return byName[name] }
