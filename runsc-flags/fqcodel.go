package runscflags

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// fq_codel's flags: the qdisc alone (--qdisc=fq_codel) or as the tbf's
// child (--qdisc-tbf-child=fq_codel), and its knobs, with tc's names.
const (
	FlagTBFChild         = "qdisc-tbf-child"
	FlagFQCoDelLimit     = "qdisc-fq-codel-limit"
	FlagFQCoDelFlows     = "qdisc-fq-codel-flows"
	FlagFQCoDelTarget    = "qdisc-fq-codel-target"
	FlagFQCoDelInterval  = "qdisc-fq-codel-interval"
	FlagFQCoDelQuantum   = "qdisc-fq-codel-quantum"
	FlagFQCoDelMemLimit  = "qdisc-fq-codel-memory-limit"
	FlagFQCoDelDropBatch = "qdisc-fq-codel-drop-batch"
	FlagFQCoDelECN       = "qdisc-fq-codel-ecn"
)

// ChildFQCoDel is --qdisc-tbf-child's one value besides the default
// ("fifo", the tbf's own byte FIFO).
const ChildFQCoDel = "fq_codel"

// childValue is a flag.Value for --qdisc-tbf-child.
type childValue string

func (v *childValue) Set(s string) error {
	switch s {
	case "fifo", "":
		*v = ""
	case ChildFQCoDel:
		*v = ChildFQCoDel
	default:
		return fmt.Errorf("invalid tbf child %q: choose fifo or fq_codel", s)
	}
	return nil
}
func (v *childValue) String() string {
	if *v == "" {
		return "fifo"
	}
	return string(*v)
}
func (v *childValue) Get() any { return string(*v) }

// countValue is a flag.Value for a plain count (packets, flows).
type countValue uint64

func (v *countValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	*v = countValue(n)
	return err
}
func (v *countValue) String() string { return fmt.Sprint(uint64(*v)) }
func (v *countValue) Get() any       { return uint64(*v) }

// registerFQCoDelFlags registers fq_codel's flags on fs.
func registerFQCoDelFlags(fs *flag.FlagSet) {
	fs.Var(new(childValue), FlagTBFChild, "tbf: the queue under the bucket: fifo (a byte FIFO, bounded by --qdisc-tbf-limit or -latency) or fq_codel (flow queues with CoDel: low latency for sparse flows under load; set no tbf limit or latency).")
	fs.Var(new(countValue), FlagFQCoDelLimit, fmt.Sprintf("fq_codel: most packets queued (default %d).", fqcodel.DefaultLimit))
	fs.Var(new(countValue), FlagFQCoDelFlows, fmt.Sprintf("fq_codel: flow queues (default %d, at most %d).", fqcodel.DefaultFlows, fqcodel.MaxFlows))
	fs.Duration(FlagFQCoDelTarget, 0, fmt.Sprintf("fq_codel: acceptable standing queue delay, e.g. 5ms (default %v).", fqcodel.DefaultTarget))
	fs.Duration(FlagFQCoDelInterval, 0, fmt.Sprintf("fq_codel: how long the delay may stay above target before CoDel drops, about a worst-case RTT, e.g. 100ms (default %v).", fqcodel.DefaultInterval))
	fs.Var(new(sizeValue), FlagFQCoDelQuantum, "fq_codel: bytes a flow sends per round; "+sizeHelp+" (default the NIC's MTU plus header).")
	fs.Var(new(sizeValue), FlagFQCoDelMemLimit, "fq_codel: most memory the queued packets take; "+sizeHelp+" (default 32mb).")
	fs.Var(new(countValue), FlagFQCoDelDropBatch, fmt.Sprintf("fq_codel: most packets dropped at once from the fattest flow at the limit (default %d).", fqcodel.DefaultDropBatch))
	fs.Bool(FlagFQCoDelECN, true, "fq_codel: mark ECN-capable packets CE instead of dropping them (tc's ecn; false is noecn).")
}

// fqCoDelFlagSetters are NewFromFlags's readers of fq_codel's flags.
func (c *Config) fqCoDelFlagSetters() []flagSetter {
	return []flagSetter{
		{FlagTBFChild, func(v any) { c.TBFChild = v.(string) }},
		{FlagFQCoDelLimit, func(v any) { c.FQLimit = v.(uint64) }},
		{FlagFQCoDelFlows, func(v any) { c.FQFlows = v.(uint64) }},
		{FlagFQCoDelTarget, func(v any) { c.FQTarget = v.(time.Duration) }},
		{FlagFQCoDelInterval, func(v any) { c.FQInterval = v.(time.Duration) }},
		{FlagFQCoDelQuantum, func(v any) { c.FQQuantum = v.(uint64) }},
		{FlagFQCoDelMemLimit, func(v any) { c.FQMemoryLimit = v.(uint64) }},
		{FlagFQCoDelDropBatch, func(v any) { c.FQDropBatch = v.(uint64) }},
		{FlagFQCoDelECN, func(v any) { c.FQNoECN = !v.(bool) }},
	}
}

// fqCoDelArgs is Args for fq_codel's flags.
func (c *Config) fqCoDelArgs() []string {
	var args []string
	if c.TBFChild != "" {
		args = append(args, fmt.Sprintf("--%s=%s", FlagTBFChild, c.TBFChild))
	}
	for _, f := range []struct {
		name string
		v    uint64
	}{{FlagFQCoDelLimit, c.FQLimit}, {FlagFQCoDelFlows, c.FQFlows}, {FlagFQCoDelQuantum, c.FQQuantum}, {FlagFQCoDelMemLimit, c.FQMemoryLimit}, {FlagFQCoDelDropBatch, c.FQDropBatch}} {
		if f.v != 0 {
			args = append(args, fmt.Sprintf("--%s=%d", f.name, f.v))
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{FlagFQCoDelTarget, c.FQTarget}, {FlagFQCoDelInterval, c.FQInterval}} {
		if f.v != 0 {
			args = append(args, fmt.Sprintf("--%s=%v", f.name, f.v))
		}
	}
	if c.FQNoECN {
		args = append(args, "--"+FlagFQCoDelECN+"=false")
	}
	return args
}

// FQCoDelConfig returns the fqcodel.Config the flags describe. Validate
// first: a value past 32 bits is held as the largest 32-bit one.
func (c *Config) FQCoDelConfig() fqcodel.Config {
	return fqcodel.Config{
		Limit:       sat32(c.FQLimit),
		Flows:       sat32(c.FQFlows),
		Target:      c.FQTarget,
		Interval:    c.FQInterval,
		Quantum:     sat32(c.FQQuantum),
		MemoryLimit: sat32(c.FQMemoryLimit),
		DropBatch:   sat32(c.FQDropBatch),
		NoECN:       c.FQNoECN,
	}
}

// sat32 is v, or the largest uint32 if v is larger.
func sat32(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }

// fqCoDelFlags maps fqcodel.ConfigError fields to flags.
var fqCoDelFlags = map[string]string{
	"limit":        FlagFQCoDelLimit,
	"flows":        FlagFQCoDelFlows,
	"target":       FlagFQCoDelTarget,
	"interval":     FlagFQCoDelInterval,
	"quantum":      FlagFQCoDelQuantum,
	"memory_limit": FlagFQCoDelMemLimit,
	"drop_batch":   FlagFQCoDelDropBatch,
}

// validateFQCoDel is Validate for fq_codel's flags: its knobs make a
// valid fqcodel.Config, and a tbf with fq_codel as its child has no byte
// limit or latency of its own.
func (c *Config) validateFQCoDel() error {
	if c.TBFChild == ChildFQCoDel && (c.TBFLimit != 0 || c.TBFLatency != 0) {
		return fmt.Errorf("--%s=fq_codel: fq_codel's limits bound the queue under the tbf; leave --%s and --%s unset", FlagTBFChild, FlagTBFLimit, FlagTBFLatency)
	}
	// What fqcodel.Config holds in 32 bits is refused past them here, with
	// fqcodel's bound, rather than truncated by FQCoDelConfig; the rest
	// of fqcodel's bounds are its Check's.
	for _, f := range []struct {
		flag     string
		v, most  uint64
		whatMost string
	}{
		{FlagFQCoDelLimit, c.FQLimit, math.MaxUint32, "packets (Linux's u32)"},
		{FlagFQCoDelFlows, c.FQFlows, fqcodel.MaxFlows, "flows (Linux's fq_codel)"},
		{FlagFQCoDelQuantum, c.FQQuantum, fqcodel.MaxQuantum, "bytes (1 MiB, Linux's FQ_CODEL_QUANTUM_MAX)"},
		{FlagFQCoDelDropBatch, c.FQDropBatch, math.MaxUint32, "packets (Linux's u32)"},
	} {
		if f.v > math.MaxUint32 {
			return fmt.Errorf("--%s=%d: out of range; at most %d %s", f.flag, f.v, f.most, f.whatMost)
		}
	}
	// Linux's fq_codel_change clamps memory_limit to 2^31 bytes; a flag
	// past it is refused rather than quietly lowered.
	if c.FQMemoryLimit > fqcodel.MaxMemoryLimit {
		return fmt.Errorf("--%s=%d: at most 2 GiB (%d bytes, where Linux's fq_codel clamps it)", FlagFQCoDelMemLimit, c.FQMemoryLimit, uint64(fqcodel.MaxMemoryLimit))
	}
	if err := c.FQCoDelConfig().Check(); err != nil {
		return flagError(err, fqCoDelFlags)
	}
	return nil
}

// fqKnob is an fq_codel knob an annotation may lower: the ceiling is the
// operator's value, or Linux's default when the operator set none (an
// unset knob means the default, not "no bound").
type fqKnob struct {
	// uint64 knobs; dur is set for the durations.
	field func(*Config) *uint64
	dur   func(*Config) *time.Duration
	def   uint64
	parse func(string) (uint64, error)
}

// fqCeilings are the fq_codel knobs that bound the queue from above: the
// packet and memory limits bound its length, target and interval the
// delay CoDel lets stand. Flows, quantum, drop_batch and ecn bound
// nothing (they set how fairness and drops are done), so only the
// operator sets them.
var fqCeilings = map[string]fqKnob{
	FlagFQCoDelLimit:    {field: func(c *Config) *uint64 { return &c.FQLimit }, def: fqcodel.DefaultLimit, parse: parseCount},
	FlagFQCoDelMemLimit: {field: func(c *Config) *uint64 { return &c.FQMemoryLimit }, def: fqcodel.DefaultMemoryLimit, parse: rate.ParseSize},
	FlagFQCoDelTarget:   {dur: func(c *Config) *time.Duration { return &c.FQTarget }, def: uint64(fqcodel.DefaultTarget)},
	FlagFQCoDelInterval: {dur: func(c *Config) *time.Duration { return &c.FQInterval }, def: uint64(fqcodel.DefaultInterval)},
}

func parseCount(s string) (uint64, error) { return strconv.ParseUint(s, 10, 32) }

// applyFQCoDelAnnotation applies an annotation for one of fq_codel's
// flags to next under the policy; handled is false for other flags.
func applyFQCoDelAnnotation(name, value string, op, next *Config) (handled bool, err error) {
	override := fmt.Sprintf("requires the runtime flag --%s", FlagAllowFlagOverride)
	switch name {
	case FlagTBFChild:
		var v childValue
		if err := v.Set(value); err != nil {
			return true, err
		}
		if v == "" && op.TBFChild != "" && !op.AllowFlagOverride {
			return true, fmt.Errorf("only fq_codel, which never raises a ceiling, may be chosen; going back to fifo %s", override)
		}
		next.TBFChild = string(v)
		return true, nil
	case FlagFQCoDelFlows, FlagFQCoDelQuantum, FlagFQCoDelDropBatch, FlagFQCoDelECN:
		if !op.AllowFlagOverride {
			return true, fmt.Errorf("--%s bounds nothing, so it is the operator's to set; setting it %s", name, override)
		}
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		registerFQCoDelFlags(fs)
		if err := fs.Set(name, value); err != nil {
			return true, err
		}
		for _, s := range next.fqCoDelFlagSetters() {
			if s.name == name {
				s.set(fs.Lookup(name).Value.(flag.Getter).Get())
			}
		}
		return true, nil
	}
	k, ok := fqCeilings[name]
	if !ok {
		return false, nil
	}
	var v, ceiling uint64
	if k.dur != nil {
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return true, fmt.Errorf("want a positive duration such as 5ms")
		}
		v, ceiling = uint64(d), uint64(*k.dur(op))
	} else {
		if v, err = k.parse(value); err != nil {
			return true, err
		}
		if v == 0 {
			return true, fmt.Errorf("0 would mean the default; only a non-zero value no greater than the operator's may be set")
		}
		ceiling = *k.field(op)
	}
	if ceiling == 0 {
		ceiling = k.def
	}
	if v > ceiling && !op.AllowFlagOverride {
		show := fmt.Sprint(ceiling)
		if k.dur != nil {
			show = time.Duration(ceiling).String()
		}
		return true, fmt.Errorf("exceeds the ceiling --%s=%s (the operator's, or Linux's default); raising it %s", name, show, override)
	}
	if k.dur != nil {
		*k.dur(next) = time.Duration(v)
	} else {
		*k.field(next) = v
	}
	return true, nil
}

// qdiscMayReplace says whether an annotation may select q where the
// operator chose op: tbf anywhere (a bucket only delays or drops what the
// qdisc under it would send), and fq_codel in place of fifo or none
// (neither has a ceiling that fq_codel would remove); in place of tbf it
// would remove the rate.
func qdiscMayReplace(q, op QueueingDiscipline) bool {
	switch q {
	case QDiscTBF:
		return true
	case QDiscFQCoDel:
		return op == QDiscFIFO || op == QDiscNone || op == QDiscFQCoDel
	}
	return false
}

// gsoPacket is the largest packet a NIC with host GSO hands the qdisc
// (runsc's default): 64 KiB and the Ethernet header.
const gsoPacket = 65536 + 14

// fqCoDelWarnings warns when fq_codel under a tbf has a target shorter
// than the largest packet it may queue takes at the tbf's rate: a sparse
// flow's packet that waits behind one is over target, and CoDel drops the
// next one that does within an interval (as Linux's fq_codel under tbf
// does with TSO). With host GSO that packet is a GSO packet, cut by the
// tbf to fit its bucket: the smaller of the burst and 64 KiB + 14.
func (c *Config) fqCoDelWarnings() []string {
	if c.QDisc != QDiscTBF || c.TBFChild != ChildFQCoDel || c.TBFRate == 0 {
		return nil
	}
	target := cmpOr(c.FQTarget, fqcodel.DefaultTarget)
	largest := min(uint64(gsoPacket), c.TBFBurst)
	if c.TBFMTU != 0 {
		largest = min(largest, c.TBFMTU)
	}
	gso := time.Duration(float64(largest) / float64(c.TBFRate) * float64(time.Second))
	if gso <= target {
		return nil
	}
	burst := ""
	if b := uint64(float64(c.TBFRate) * target.Seconds() / 2); b >= 1514 {
		burst = fmt.Sprintf("a burst of at most %d bytes, ", b)
	}
	return []string{fmt.Sprintf("--%s: with host GSO (--gso, on by default) a packet may be %d bytes (the tbf cuts larger ones to fit --%s), %v at --%s=%s, longer than the target %v: sparse flows' packets waiting behind one are over target and CoDel may drop them; use %s--gso=false, or a target of at least %v",
		FlagFQCoDelTarget, largest, FlagTBFBurst, gso.Round(100*time.Microsecond), FlagTBFRate, rate.FormatRate(c.TBFRate), target, burst, (gso * 3 / 2).Round(time.Millisecond))}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
