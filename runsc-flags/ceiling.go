package runscflags

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"runtime"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Ceiling is the direction whose ceiling a flag sets: the tbf that shapes
// what the sandbox sends (EgressCeiling: --qdisc=tbf, or one put over a
// fifo or fq_codel) or receives (IngressCeiling: package ingress). A
// ceiling's flags are the ones `runsc qdisc change` may change on a
// running sandbox, as Linux's `tc qdisc change` changes a tbf's rate,
// burst and limit. The others (NotCeiling) shape the qdisc itself: its
// kind, its child, fq_codel's knobs.
//
// A ceiling's flags are known by their rows alone: each one's Linux.Param
// is the tbf.Config setting it is (tbfSettings), from which the tbf.Config
// of a direction (TBFConfig, IngressConfig), the flags its errors name,
// what a change that removes a bucket clears, and whether a change leaves
// a direction as it is, all follow.
type Ceiling int

const (
	// NotCeiling: the flag shapes the qdisc itself, and cannot change on
	// a running sandbox.
	NotCeiling Ceiling = iota
	// EgressCeiling: the flag sets the tbf on what the sandbox sends.
	EgressCeiling
	// IngressCeiling: the flag sets the tbf on what the sandbox receives.
	IngressCeiling
)

// ceilingKind is the kind a ceiling is: its flags are the settings of a
// tbf (tbfSettings). Where the NIC runs it, a change of the ceiling is a
// change of its options (Kind.Change); over any other kind's queue the
// ceiling is a tbf's buckets, put in place by that kind's Kind.Ceiling.
var ceilingKind = tbf.Kind.Name

// ceilings are the two directions, in the order they are checked.
var ceilings = []Ceiling{EgressCeiling, IngressCeiling}

// What a direction's rows cannot say.
var directions = map[Ceiling]struct {
	// queueStays: the direction's queue outlives its ceiling. Egress
	// queues in the qdisc, which a change that removes the ceiling leaves
	// with its limit; ingress queues only while shaped, so its limit goes
	// with its last rate.
	queueStays bool
	// unflagged are the flags errors about the tbf.Config fields no flag
	// sets name: lanes (one a CPU, or the qdisc's) and, on the receive
	// path, overhead (charged against the burst).
	unflagged map[string]string
}{
	EgressCeiling:  {queueStays: true, unflagged: map[string]string{"lanes": FlagQDisc}},
	IngressCeiling: {unflagged: map[string]string{"lanes": FlagIngressRate, "overhead": FlagIngressBurst}},
}

// A tbf.Config setting's part in its ceiling.
type part int

const (
	// partRate: a bucket's rate; 0 removes the bucket.
	partRate part = iota
	// partBucket: a setting of the bucket whose rate is tbfSetting.rate
	// (burst, peakrate, mtu; latency, which converts to bytes at the byte
	// rate; overhead, mpu and linklayer, charged against it): a change
	// that sets that rate to 0 clears it.
	partBucket
	// partQueue: the queue's bound, which goes with the whole ceiling
	// where the queue does not stay (directions).
	partQueue
)

// tbfSetting is a setting of a tbf.Config, as a ceiling's flag sets it.
type tbfSetting struct {
	part part
	// rate is the Linux.Param of a partBucket setting's bucket's rate.
	rate string
	// set stores v, a value of the flag's field type, in t.
	set func(t *tbf.Config, v any)
}

// tbfSettings are the settings of a tbf.Config a ceiling's flag may be,
// by tc's name for each (Linux.Param, and tbf.ConfigError's Field). Sizes
// past 32 bits, which Validate refuses, are held as the largest.
var tbfSettings = map[string]tbfSetting{
	"rate":      {part: partRate, set: func(t *tbf.Config, v any) { t.Rate = v.(uint64) }},
	"burst":     {part: partBucket, rate: "rate", set: func(t *tbf.Config, v any) { t.Burst = sat32(v.(uint64)) }},
	"peakrate":  {part: partBucket, rate: "rate", set: func(t *tbf.Config, v any) { t.PeakRate = v.(uint64) }},
	"mtu":       {part: partBucket, rate: "rate", set: func(t *tbf.Config, v any) { t.MTU = sat32(v.(uint64)) }},
	"latency":   {part: partBucket, rate: "rate", set: func(t *tbf.Config, v any) { t.Latency = v.(time.Duration) }},
	"limit":     {part: partQueue, set: func(t *tbf.Config, v any) { t.Limit = sat32(v.(uint64)) }},
	"pkt_rate":  {part: partRate, set: func(t *tbf.Config, v any) { t.PacketRate = v.(uint64) }},
	"pkt_burst": {part: partBucket, rate: "pkt_rate", set: func(t *tbf.Config, v any) { t.PacketBurst = sat32(v.(uint64)) }},
	"overhead":  {part: partBucket, rate: "rate", set: func(t *tbf.Config, v any) { t.Overhead = int32(min(v.(uint64), math.MaxInt32)) }},
	"mpu":       {part: partBucket, rate: "rate", set: func(t *tbf.Config, v any) { t.MPU = sat32(v.(uint64)) }},
	"linklayer": {part: partBucket, rate: "rate", set: func(t *tbf.Config, v any) { t.ATM = v.(string) == linkLayerATM }},
}

// live reports whether `runsc qdisc change` may change f on a running
// sandbox: whether it is a ceiling's.
func (f *Flag) live() bool { return f.Ceiling != NotCeiling }

// setting is the tbf.Config setting a ceiling's flag is.
func (f *Flag) setting() tbfSetting { return tbfSettings[f.Linux.Param] }

// ceilingFlags returns the flags of ceiling d, in the table's order.
func ceilingFlags(d Ceiling) []*Flag {
	var fs []*Flag
	for i := range Flags {
		if Flags[i].Ceiling == d {
			fs = append(fs, &Flags[i])
		}
	}
	return fs
}

// liveFlags names the flags `runsc qdisc change` may change, for errors:
// "--qdisc-tbf-rate, ... or --qdisc-ingress-pkt-burst".
func liveFlags() string {
	var names []string
	for _, d := range ceilings {
		for _, f := range ceilingFlags(d) {
			names = append(names, "--"+f.Name)
		}
	}
	return joinList(names, "or")
}

// tbfConfig returns the tbf.Config of c's ceiling d, with one queue per
// GOMAXPROCS, as runsc gives fifo.
func (c *Config) tbfConfig(d Ceiling) tbf.Config {
	t := tbf.Config{Lanes: min(runtime.GOMAXPROCS(0), tbf.MaxLanes)}
	for _, f := range ceilingFlags(d) {
		f.setting().set(&t, deref(f.field(c)))
	}
	return t
}

// paramFlags maps the fields of ceiling d's tbf.ConfigError (tc's names)
// to the flags that set them, or that an error about a field no flag sets
// is to name.
func paramFlags(d Ceiling) map[string]string {
	m := maps.Clone(directions[d].unflagged)
	for _, f := range ceilingFlags(d) {
		m[f.Linux.Param] = f.Name
	}
	return m
}

// sameCeiling reports whether a and b have the same ceiling d: whether a
// change from a to b leaves that direction as it is.
func sameCeiling(d Ceiling, a, b *Config) bool {
	for _, f := range ceilingFlags(d) {
		if deref(f.field(a)) != deref(f.field(b)) {
			return false
		}
	}
	return true
}

// shaped reports whether c's ceiling d has a rate.
func (c *Config) shaped(d Ceiling) bool {
	for _, f := range ceilingFlags(d) {
		if f.setting().part == partRate && f.number(c) != 0 {
			return true
		}
	}
	return false
}

// clearRemoved clears, in each direction, the settings of a bucket whose
// rate is 0 and, where the queue goes with the ceiling, the queue's bound
// when both rates are (see Changed).
func (c *Config) clearRemoved() {
	for _, d := range ceilings {
		shaped := c.shaped(d)
		fs := ceilingFlags(d)
		for _, f := range fs {
			s := f.setting()
			if s.part == partBucket && !c.rateSet(fs, s.rate) || s.part == partQueue && !shaped && !directions[d].queueStays {
				f.unset(c)
			}
		}
	}
}

// rateSet reports whether the rate of those of fs whose Linux.Param is
// param is set in c.
func (c *Config) rateSet(fs []*Flag, param string) bool {
	for _, f := range fs {
		if f.Linux.Param == param {
			return f.number(c) != 0
		}
	}
	return false
}

// unset sets f's field in c to its zero value: for a ceiling's flag,
// unset.
func (f *Flag) unset(c *Config) { reflect.ValueOf(f.field(c)).Elem().SetZero() }

// needsRate refuses settings of ceiling d where neither of its rates is
// set, naming them and the rates: "--qdisc-ingress-burst, ... and
// --qdisc-ingress-pkt-burst shape the receive direction and need
// --qdisc-ingress-rate (...) or --qdisc-ingress-pkt-rate". what names
// the direction.
func (c *Config) needsRate(d Ceiling, what string) error {
	if c.shaped(d) {
		return nil
	}
	var rates, settings []string
	set := false
	for _, f := range ceilingFlags(d) {
		switch {
		case f.setting().part != partRate:
			settings = append(settings, "--"+f.Name)
			set = set || f.number(c) != 0
		case f.Kind == KindRate:
			rates = append(rates, "--"+f.Name+" (bytes/s, or with units such as 10mbit)")
		default:
			rates = append(rates, "--"+f.Name)
		}
	}
	if !set {
		return nil
	}
	return fmt.Errorf("%s shape %s and need %s", joinList(settings, "and"), what, joinList(rates, "or"))
}
