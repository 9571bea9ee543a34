package runscflags

import (
	"slices"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
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
	FlagTBFOverhead        = "qdisc-tbf-overhead"
	FlagTBFMPU             = "qdisc-tbf-mpu"
	FlagTBFLinkLayer       = "qdisc-tbf-linklayer"
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
	FlagIngressQDisc       = "qdisc-ingress"
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
	// words is the registered kind whose words the flag holds
	// (KindWords), in direction wordsOf (kinds.go).
	words   *qdisc.Kind
	wordsOf Ceiling
	// alias is the kind whose words the flag holds in its knobs' flags
	// (KindAliasWords: aliases.go).
	alias *alias
	// options returns the options of the kind whose words flag the flag
	// is (kindFlagName: --qdisc-tbf, --qdisc-htb, --qdisc-ingress-cake)
	// as the table's flags give them, for its Kind: the flag's words and
	// those of the kind's knobs' flags. An error names the flag. nil for
	// the other flags, and for the registered kinds' words flags, whose
	// words are the options.
	options func(c *Config) (qdisc.Options, error)
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
	// Raise: an annotation may raise the flag, never lower it: what
	// every packet is charged (tbf's overhead, mpu, linklayer atm), which
	// the more it is, the tighter it shapes.
	Raise
)

// Unset is the ceiling of a Lower flag the operator left unset.
type Unset int

const (
	// NoCeiling: any valid value (a tbf knob: unset means no such bound).
	NoCeiling Unset = iota
	// DefaultCeiling: Linux's default, Rule.Default (an fq_codel knob:
	// unset means the default, not unbounded).
	DefaultCeiling
	// DefaultQueue: the queue a tbf has where the operator bounds it by
	// neither limit nor latency, DefaultQueueBytes (a tbf's limit and
	// latency: unset means 1000 full-size packets, not unbounded). A
	// limit must be no larger, and a latency must give no larger a limit
	// at the rate and burst in force (rate*latency + burst): the two are
	// one bound, checked on the result (Config.defaultQueues).
	DefaultQueue
)

// DefaultQueueBytes is the queue a pod's tbf is held to where the
// operator left both its limit and its latency unset: DefaultLimitPackets
// frames of a 1500-byte MTU and its 14-byte header, what a tbf left at its
// default queues on such a link (a larger MTU's default is larger; the
// bound holds a pod to the smaller, as tbf.Config.Tighten does).
const DefaultQueueBytes = tbf.DefaultLimitPackets * 1514

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
	raise        = Rule{Permit: Raise}
	lower        = Rule{Permit: Lower}
	lowerQueue   = Rule{Permit: Lower, Unset: DefaultQueue}
	operatorOnly = Rule{Permit: OperatorOnly}
)

// lowerDefault is the rule of an fq_codel knob whose default is a ceiling.
func lowerDefault[T uint64 | time.Duration](def T) Rule {
	return Rule{Permit: Lower, Unset: DefaultCeiling, Default: uint64(def)}
}

// Flags is the table, in the order Args gives them. It is read-only by
// convention.
var Flags = slices.Concat(shapingRows, fqCoDelRows, classRows, nodeRows)

// aliasFlags are the words flags of the kinds whose knobs are flags of
// the table (aliases.go): after it in AllFlags.
var aliasFlags = aliasRows()

// byName indexes Flags and aliasFlags.
var byName = func() map[string]*Flag {
	m := make(map[string]*Flag, len(Flags)+len(aliasFlags))
	for _, fs := range [][]Flag{Flags, aliasFlags} {
		for i := range fs {
			m[fs[i].Name] = &fs[i]
		}
	}
	return m
}()

// lookup returns the flag called name, the table's or a registered
// kind's words flag (kindFlags), or nil.
func lookup(name string) *Flag {
	if f := byName[name]; f != nil {
		return f
	}
	for _, k := range qdisc.Kinds() {
		for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
			if kindFlagName(d, k.Name) == name {
				return newKindFlag(k, d)
			}
		}
	}
	return nil
}
