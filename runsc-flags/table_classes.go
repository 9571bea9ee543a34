package runscflags

import (
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// cake's words flags give cake's options with its settings' flags read
// after them (CakeConfig), which read the table: they are set once the
// table is built.
func init() {
	byName[FlagCake].options = func(c *Config) (qdisc.Options, error) { return asOptions(c.CakeConfig()) }
	byName[FlagIngressCake].options = func(c *Config) (qdisc.Options, error) { return asOptions(c.IngressCakeConfig()) }
}

// classRows are the flags of htb's classes and of cake, after
// fqCoDelRows in the table.
var classRows = []Flag{
	{
		Name: FlagHTB, Kind: KindHTB, field: func(c *Config) any { return &c.HTB }, classes: EgressCeiling,
		options: scriptOptions(FlagHTB, func(c *Config) string { return c.HTB }),
		Default: "", Unset: "unset; required with `--qdisc=htb`",
		Example:    "class root classid 1:1 rate 10mbit",
		Usage:      "htb: classes and filters for --qdisc=htb, in tc's words, statements separated by ';': qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:20 rate 10mbit quota 50gb per 24h; filter dst 10.0.0.0/8 classid 1:10.",
		Annotation: Rule{Permit: Tighten, Note: "class statements that lower a class's rate, ceil, burst or cburst, add or lower a quota (`class classid 1:20 ceil 5mbit`), or split a leaf into classes no looser with a chain of filters under it ending in a catch-all (`class parent 1:20 classid 1:21 rate 1mbit; filter parent 1:20 classid 1:21`); the root filters and the default stay the operator's"},
		Linux:      Linux{Qdisc: "htb"},
	},
	{
		Name: FlagIngressHTB, Kind: KindHTB, field: func(c *Config) any { return &c.IngressHTB }, classes: IngressCeiling,
		options: scriptOptions(FlagIngressHTB, func(c *Config) string { return c.IngressHTB }),
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
