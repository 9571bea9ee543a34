package runscflags

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// AnnotationPrefix starts the OCI annotation keys that set flags.
const AnnotationPrefix = "dev.gvisor.flag."

// requiresOverride ends the refusals --allow-flag-override would lift.
const requiresOverride = "requires the runtime flag --" + FlagAllowFlagOverride

// ApplyAnnotations applies the dev.gvisor.flag.* annotations this package
// owns, under each flag's Rule (Flags) and the rules of the package doc,
// and Kubernetes' bandwidth annotations. It is atomic: on error the Config
// is unchanged. It is the one path by which what the sandbox's side
// writes meets the policy: a pod's annotations, and a checkpoint's saved
// changes (NIC.Restore).
func (c *Config) ApplyAnnotations(annotations map[string]string) error {
	return c.applyPolicy(annotations, fromAnnotations)
}

// source names what applyPolicy applies, for its errors.
type source struct {
	// one names a key and its value: `annotation dev.gvisor.flag.x="v"`.
	one func(key, value string) string
	// set names the keys applied: "annotations dev.gvisor.flag.x, ...".
	set func(keys []string) string
	// atStart: what is applied builds the sandbox (a pod's annotations),
	// where the egress ceiling shapes only a tbf (unappliedCeiling); a
	// checkpoint's changes are applied as `runsc qdisc change` applies
	// them, which puts a ceiling over any kind that takes one.
	atStart bool
}

// fromAnnotations names a pod's annotations.
var fromAnnotations = source{
	one:     func(key, value string) string { return fmt.Sprintf("annotation %s=%q", key, value) },
	set:     func(keys []string) string { return "annotations " + strings.Join(keys, ", ") },
	atStart: true,
}

// applyPolicy is ApplyAnnotations, its errors naming what it applies as
// src says.
func (c *Config) applyPolicy(annotations map[string]string, src source) error {
	op := c.ceilings()
	c.operator = op
	next := *c
	next.Notices = slices.Clone(c.Notices) // c's stay as they are if the set is refused
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if strings.HasPrefix(k, AnnotationPrefix) || k == AnnotationKubeEgress || k == AnnotationKubeIngress {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // the first error is the same whatever the map order
	var applied []string
	queuesChecked := false
	for _, key := range keys {
		value := annotations[key]
		if key == AnnotationKubeEgress || key == AnnotationKubeIngress {
			// Kubernetes' keys sort after dev.gvisor.flag.*: the queues
			// those set are held to the default queue here, before a
			// bandwidth sets its own (KubeLatency, the CNI bandwidth
			// plugin's, by its own rule).
			if !queuesChecked {
				if err := next.defaultQueues(op); err != nil {
					return fmt.Errorf("%s: %w", src.set(applied), err)
				}
				queuesChecked = true
			}
			r, err := ParseKubeBandwidth(value)
			if err != nil {
				return fmt.Errorf("%s: %w", src.one(key, value), err)
			}
			next.applyKube(op, key, value, r)
			applied = append(applied, key)
			continue
		}
		f := lookup(strings.TrimPrefix(key, AnnotationPrefix))
		if f == nil {
			continue // a flag the runtime owns
		}
		if err := f.annotate(op, &next, value); err != nil {
			return fmt.Errorf("%s: %w", src.one(key, value), err)
		}
		applied = append(applied, key)
	}
	if src.atStart {
		if err := next.unappliedCeiling(annotations, applied); err != nil {
			return err
		}
	}
	if err := next.Validate(); err != nil {
		return fmt.Errorf("%s give an invalid configuration: %w", src.set(applied), err)
	}
	if !queuesChecked {
		if err := next.defaultQueues(op); err != nil {
			return fmt.Errorf("%s: %w", src.set(applied), err)
		}
	}
	next.keepFIFOBound(op)
	*c = next
	return nil
}

// keepFIFOBound holds a flow-queueing child a pod put in place of the
// operator's byte FIFO (--qdisc-tbf-child=fifo) to the FIFO's bound where
// neither set one: the FIFO's unset limit is 1000 full-size packets
// (DefaultQueueBytes), fq's is 1000 packets as the sender hands them down
// (64 KiB each on a host-GSO link) and fq_codel's its own 32 MiB. fq
// takes it as the tbf's limit, fq_codel as its memory limit (which counts
// at least a packet's bytes). A notice says so.
func (c *Config) keepFIFOBound(op *Config) {
	if op.AllowFlagOverride || op.TBFChild != ChildFIFO || c.TBFChild == ChildFIFO || c.TBFLimit != 0 || c.TBFLatency != 0 {
		return
	}
	switch c.TBFChild {
	case ChildFQCoDel:
		if c.FQMemoryLimit != 0 && c.FQMemoryLimit <= DefaultQueueBytes {
			return
		}
		c.FQMemoryLimit = DefaultQueueBytes
		c.Notices = append(c.Notices, fmt.Sprintf("--%s=%s in place of the operator's fifo keeps its bound: --%s=%d (1000 full-size packets)", FlagTBFChild, c.TBFChild, FlagFQCoDelMemLimit, c.FQMemoryLimit))
	default:
		c.TBFLimit = DefaultQueueBytes
		c.Notices = append(c.Notices, fmt.Sprintf("--%s=fq in place of the operator's fifo keeps its bound: --%s=%d (1000 full-size packets)", FlagTBFChild, FlagTBFLimit, c.TBFLimit))
	}
}

// ceilings returns the operator's values annotations are held to: c's
// own until its first ApplyAnnotations (or since NewFromFlags).
func (c *Config) ceilings() *Config {
	if c.operator != nil {
		return c.operator
	}
	return c.snapshot()
}

// annotate applies an annotation's value for f to next under f's Rule,
// against the operator's values op; the error does not name the
// annotation.
func (f *Flag) annotate(op, next *Config, value string) error {
	r, override := f.Annotation, op.AllowFlagOverride
	switch {
	case r.Permit == Never:
		return fmt.Errorf("--%s is the operator's and cannot be set by an annotation", f.Name)
	case r.Permit == OperatorOnly && !override:
		return fmt.Errorf("--%s bounds nothing, so it is the operator's to set; setting it %s", f.Name, requiresOverride)
	}
	if f.alias != nil {
		return f.alias.annotate(op, next, value)
	}
	if r.Permit == Tighten && f.words != nil {
		return f.tightenKind(op, next, value)
	}
	if r.Permit == Tighten && (f.Kind == KindCake || f.Kind == KindCakeKnob) {
		return f.tightenCake(op, next, value)
	}
	if r.Permit == Tighten {
		return f.tighten(op, next, value)
	}
	v, err := f.Kind.parse(value)
	if f.Kind == KindDuration && r.Permit == Lower && (err != nil || v.(time.Duration) <= 0) {
		return fmt.Errorf("want a positive duration such as %s", f.Example)
	}
	if err != nil {
		return err
	}
	switch {
	case r.Permit == Select && !override:
		var chosen Config
		f.assign(&chosen, v)
		if got, over := f.get(&chosen), f.get(op); !r.selects(got, over) {
			return fmt.Errorf("only %s may be selected; %s=%s over the operator's %s %s", r.choices(), f.Name, got, over, requiresOverride)
		}
	case r.Permit == Lower:
		if err := f.lower(op, v); err != nil {
			return err
		}
	case r.Permit == Raise:
		if err := f.raise(op, v); err != nil {
			return err
		}
	}
	f.assign(next, v)
	return nil
}

// raise checks v, of the field's type, against a Raise flag's floor, the
// operator's value, which --allow-flag-override lifts.
func (f *Flag) raise(op *Config, v any) error {
	if op.AllowFlagOverride {
		return nil
	}
	var scratch Config
	f.assign(&scratch, v)
	if f.charge(&scratch) < f.charge(op) {
		return fmt.Errorf("%s is below the operator's --%s=%s, which would charge packets less; lowering it %s", f.get(&scratch), f.Name, f.get(op), requiresOverride)
	}
	return nil
}

// charge orders a Raise flag's values in c by what they charge a packet:
// a number as it is, linklayer atm above ethernet.
func (f *Flag) charge(c *Config) uint64 {
	if p, ok := f.field(c).(*string); ok {
		if *p == linkLayerATM {
			return 1
		}
		return 0
	}
	return f.number(c)
}

// lower checks v, of the field's type, against a Lower flag's ceiling,
// which --allow-flag-override lifts.
func (f *Flag) lower(op *Config, v any) error {
	r := f.Annotation
	var scratch Config
	f.assign(&scratch, v)
	n := f.number(&scratch)
	if n == 0 && r.Unset == DefaultCeiling { // even with --allow-flag-override
		return fmt.Errorf("0 would mean Linux's default for --%s; only a non-zero value no greater than the ceiling may be set", f.Name)
	}
	if op.AllowFlagOverride {
		return nil
	}
	if n == 0 {
		return fmt.Errorf("0 would unset --%s; only a non-zero value no greater than the operator's may be set, or the change %s", f.Name, requiresOverride)
	}
	if ceiling := f.number(op); ceiling != 0 && n > ceiling {
		return fmt.Errorf("%s exceeds the operator's ceiling --%s=%s; raising it %s", f.show(n), f.Name, f.show(ceiling), requiresOverride)
	} else if ceiling == 0 && r.Unset == DefaultCeiling && n > r.Default {
		return fmt.Errorf("%s exceeds the ceiling --%s=%s, Linux's default, which the operator left in force; raising it %s", f.show(n), f.Name, f.show(r.Default), requiresOverride)
	}
	return nil
}

// selects reports whether a Select flag may be set to v where the
// operator's value is over.
func (r Rule) selects(v, over string) bool {
	for _, ch := range r.Choices {
		if ch.Value == v && (len(ch.Over) == 0 || slices.Contains(ch.Over, over)) {
			return true
		}
	}
	return false
}

// choices says what a Select rule allows: "tbf, or fq_codel in place of
// none, fifo or fq_codel".
func (r Rule) choices() string {
	var s []string
	for _, ch := range r.Choices {
		if len(ch.Over) == 0 {
			s = append(s, ch.Value)
		} else {
			s = append(s, ch.Value+" in place of "+orList(ch.Over))
		}
	}
	if len(s) > 1 {
		return strings.Join(s, ", or ") + ","
	}
	return s[0]
}

// orList is "a, b or c".
func orList(s []string) string { return joinList(s, "or") }

// joinList is "a, b or c", with conj in place of "or".
func joinList(s []string, conj string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " " + conj + " " + s[len(s)-1]
}

// defaultQueues holds each direction's tbf queue to DefaultQueueBytes
// where the operator, op, left both its limit and its latency unset
// (Rule.Unset DefaultQueue): unset means a tbf's default queue, 1000
// full-size packets, which a pod may shorten, never lengthen. A latency
// is held by the limit it gives at the rate and burst c has (tc's
// rate*latency + burst; with a peak rate, the smaller of that and
// peakrate*latency + mtu). --allow-flag-override lifts it.
func (c *Config) defaultQueues(op *Config) error {
	if op.AllowFlagOverride {
		return nil
	}
	for _, d := range ceilings {
		q := queueFlagsOf(d)
		if q.limit.number(op) != 0 || q.latency.number(op) != 0 {
			continue // the operator's bound, which Lower holds each to
		}
		if n := q.limit.number(c); n > DefaultQueueBytes {
			return fmt.Errorf("--%s=%s exceeds the queue the operator's unset --%s and --%s mean, 1000 full-size packets (%s); give --%s=%d or less, or raising it %s",
				q.limit.Name, q.limit.show(n), q.limit.Name, q.latency.Name, q.limit.show(DefaultQueueBytes), q.limit.Name, DefaultQueueBytes, requiresOverride)
		}
		lat := time.Duration(q.latency.number(c))
		if lat <= 0 {
			continue
		}
		if n := q.bytesIn(c, lat); n > DefaultQueueBytes {
			give := fmt.Sprintf("--%s=%d or less", q.limit.Name, DefaultQueueBytes)
			if most := q.latencyFor(c, DefaultQueueBytes); most > 0 {
				give = fmt.Sprintf("--%s=%v or less, or %s in its place", q.latency.Name, most, give)
			}
			return fmt.Errorf("--%s=%v at --%s=%s and --%s=%s queues up to %d bytes, more than the queue the operator's unset --%s and --%s mean, 1000 full-size packets (%d bytes); give %s, or raising it %s",
				q.latency.Name, lat, q.rate.Name, q.rate.show(q.rate.number(c)), q.burst.Name, q.burst.show(q.burst.number(c)), n, q.limit.Name, q.latency.Name, DefaultQueueBytes, give, requiresOverride)
		}
	}
	return nil
}

// queueFlags are the flags of a direction's tbf that its queue's bound
// depends on.
type queueFlags struct {
	limit, latency, rate, burst *Flag
	// peakrate and mtu are nil where the direction has no peak bucket.
	peakrate, mtu *Flag
}

// queueFlagsOf returns direction d's queueFlags, by their Linux.Param.
func queueFlagsOf(d Ceiling) queueFlags {
	var q queueFlags
	for _, f := range ceilingFlags(d) {
		switch f.Linux.Param {
		case "limit":
			q.limit = f
		case "latency":
			q.latency = f
		case "rate":
			q.rate = f
		case "burst":
			q.burst = f
		case "peakrate":
			q.peakrate = f
		case "mtu":
			q.mtu = f
		}
	}
	return q
}

// bytesIn is the limit a latency of lat gives c's tbf, as tc computes it.
func (q queueFlags) bytesIn(c *Config, lat time.Duration) uint64 {
	n := addSat(rate.New(q.rate.number(c)).BytesIn(uint64(lat)), q.burst.number(c))
	if q.peakrate != nil && q.peakrate.number(c) != 0 {
		n = min(n, addSat(rate.New(q.peakrate.number(c)).BytesIn(uint64(lat)), q.mtu.number(c)))
	}
	return n
}

// latencyFor is the longest latency, to the microsecond, whose limit at
// c's rate and burst is at most limit bytes (0 if the burst alone is
// more): what an error suggests.
func (q queueFlags) latencyFor(c *Config, limit uint64) time.Duration {
	r, burst := q.rate.number(c), q.burst.number(c)
	if r == 0 || burst >= limit {
		return 0
	}
	lat := time.Duration(float64(limit-burst) / float64(r) * float64(time.Second)).Truncate(time.Microsecond)
	for lat > 0 && q.bytesIn(c, lat) > limit {
		lat -= time.Microsecond
	}
	return lat
}

// addSat is a+b, or the largest uint64 where that overflows.
func addSat(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}

// unappliedCeiling refuses a pod's egress ceiling (the keys applied of
// annotations) on a sandbox whose qdisc, c's, is not a tbf: at start the
// ceiling's flags shape only a tbf (beside another kind they are the
// ceilings for a pod that selects one), so it would not shape the
// sandbox. Refused, saying what to add, rather than taken and left doing
// nothing.
func (c *Config) unappliedCeiling(annotations map[string]string, applied []string) error {
	if c.QDisc.Is(tbf.Kind) {
		return nil
	}
	for _, key := range applied {
		if f := lookup(strings.TrimPrefix(key, AnnotationPrefix)); f != nil && f.Ceiling == EgressCeiling {
			other := ""
			if k, ok := qdisc.Lookup(string(c.QDisc)); ok && k.Tighten != nil && k.Ceiling == nil {
				// A kind with rates of its own (htb's classes, cake's
				// bandwidth), which a pod lowers in its words.
				other = fmt.Sprintf(", or lower %s's own rates (%s%s)", k.Name, AnnotationPrefix, kindFlagName(EgressCeiling, k.Name))
			}
			return fmt.Errorf("%s: the ceiling's flags shape a tbf, and the sandbox's qdisc is %s (--%s=%s): annotate %s%s=%s as well, where the operator's qdisc allows it%s", fromAnnotations.one(key, annotations[key]), c.QDisc, FlagQDisc, c.QDisc, AnnotationPrefix, FlagQDisc, ceilingKind, other)
		}
	}
	return nil
}
