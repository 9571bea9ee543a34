// Package runscflags is netqdisc's runtime configuration, as a sandbox
// runtime (runsc or one like it) offers it: runsc's own flags --qdisc,
// --qdisc-tbf-rate and --qdisc-tbf-burst, the Linux tbf knobs runsc lacks
// (--qdisc-tbf-peakrate, --qdisc-tbf-mtu, --qdisc-tbf-limit,
// --qdisc-tbf-latency), the receive direction's shaper
// (--qdisc-ingress-rate, --qdisc-ingress-burst, --qdisc-ingress-limit,
// --qdisc-ingress-latency), OCI annotations that let a container author
// make shaping stricter (dev.gvisor.flag.* and Kubernetes' bandwidth
// annotations), and the factories that build a NIC's qdisc
// (NewQueueingDiscipline) and receive shaper (NewIngress).
//
// # Units
//
// Rates and sizes take runsc's bare numbers (bytes per second, bytes) or tc's
// units: "10mbit", "1gbit", "125kbps" for rates, "64kb", "1mbit" for sizes
// (see pkg/qdisc/rate). Latency is a Go duration: "50ms", "1s".
//
// # The annotation policy
//
// Flags belong to the operator; annotations (dev.gvisor.flag.<name>) belong to
// whoever writes the container spec, who may be untrusted. Without
// --allow-flag-override, annotations may only make shaping stricter:
//
//   - qdisc may be set to tbf anywhere: a token bucket only ever delays
//     or drops what fifo, none or fq_codel would have sent. It may be set
//     to fq_codel only in place of fifo or none, which have no ceiling for
//     it to remove; any other choice could undo an operator's tbf.
//   - qdisc-tbf-child may be set to fq_codel, never back to fifo: a child
//     only orders and drops within the bucket's rate. It replaces the
//     tbf's byte FIFO, so it is refused (by Validate) where the operator
//     bounded that FIFO with a limit or latency, which fq_codel's own
//     limits could exceed.
//   - fq_codel's limit, memory-limit, target and interval may only be
//     lowered: each bounds the queue or the delay CoDel lets stand, and the
//     ceiling is the operator's value or, unset, Linux's default (unset
//     means the default, not unbounded). flows, quantum, drop-batch and ecn
//     bound nothing, so they are the operator's.
//   - rate, burst, peakrate, mtu, limit and latency, of the tbf and of the
//     ingress shaper, may only be set to a valid, non-zero value no greater
//     than the operator's, when the operator set one; with no operator
//     value, any valid value. Each of these bounds traffic from above, so a
//     smaller value is stricter. Zero is refused because in runsc's flags 0
//     means "unset", and unsetting a ceiling is the opposite of tightening
//     it. A peak rate may be added: a second bucket only ever holds packets
//     back. So may an ingress shaper where the operator has none: it only
//     ever delays or drops what would have been delivered at once.
//   - kubernetes.io/egress-bandwidth and kubernetes.io/ingress-bandwidth
//     (bits/s, Kubernetes quantities) are requests for the same: egress
//     selects tbf, and each sets its direction's rate, a burst of 10 ms of
//     it (at least 64 KiB + 14, the largest packet of a NIC with host GSO)
//     and the CNI bandwidth plugin's 25 ms latency, each only where it is
//     smaller than what is in force (a limit in force stays, capped at
//     what 25 ms holds). A bandwidth above the operator's rate is not
//     refused: Kubernetes' annotation is a limit, not a reservation, so
//     the pod gets the stricter of the two, the operator's, and a notice
//     in Notices (the boot log's warnings) says so. A dev.gvisor.flag.*
//     above a ceiling is still refused, as runsc does: it names a flag
//     the operator set.
//   - allow-flag-override can never be set by an annotation: it is the
//     operator's switch that turns the policy off.
//   - The ceilings are the operator's flag values, never values set by
//     earlier annotations, so the result does not depend on the order of the
//     annotation map (upstream runsc compares against the Config as it
//     changes, and accepts 0).
//   - A set is applied atomically: if any annotation is refused, the Config
//     is unchanged; the error names the annotation, its value, the ceiling
//     and --allow-flag-override.
//   - After applying, the Config must Validate: a pod that picks tbf where
//     the operator gave no rate and burst must give them itself.
//
// With --allow-flag-override, any flag this package owns may be set by an
// annotation; the result is validated all the same. Annotations for flags
// this package does not own, and keys without the prefix, are ignored: the
// runtime handles those.
package runscflags

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Flag names.
const (
	FlagQDisc             = "qdisc"
	FlagTBFRate           = "qdisc-tbf-rate"
	FlagTBFBurst          = "qdisc-tbf-burst"
	FlagTBFPeakRate       = "qdisc-tbf-peakrate"
	FlagTBFMTU            = "qdisc-tbf-mtu"
	FlagTBFLimit          = "qdisc-tbf-limit"
	FlagTBFLatency        = "qdisc-tbf-latency"
	FlagIngressRate       = "qdisc-ingress-rate"
	FlagIngressBurst      = "qdisc-ingress-burst"
	FlagIngressLimit      = "qdisc-ingress-limit"
	FlagIngressLatency    = "qdisc-ingress-latency"
	FlagAllowFlagOverride = "allow-flag-override"
)

// AnnotationPrefix starts the OCI annotation keys that set flags.
const AnnotationPrefix = "dev.gvisor.flag."

// FIFOQueueLen is the packets each fifo queue holds, as in runsc.
const FIFOQueueLen = 1000

// QueueingDiscipline is the --qdisc choice.
type QueueingDiscipline int

const (
	// QDiscNone sends packets straight to the link.
	QDiscNone QueueingDiscipline = iota
	// QDiscFIFO queues packets first in, first out: runsc's default.
	QDiscFIFO
	// QDiscTBF shapes packets with a token bucket filter.
	QDiscTBF
	// QDiscFQCoDel queues packets per flow with CoDel (package fqcodel).
	QDiscFQCoDel
)

var qdiscNames = []string{QDiscNone: "none", QDiscFIFO: "fifo", QDiscTBF: "tbf", QDiscFQCoDel: "fq_codel"}

// Set implements flag.Value.Set.
func (q *QueueingDiscipline) Set(v string) error {
	for i, name := range qdiscNames {
		if v == name {
			*q = QueueingDiscipline(i)
			return nil
		}
	}
	return fmt.Errorf("invalid qdisc %q: choose none, fifo, tbf or fq_codel", v)
}

// String implements flag.Value.String.
func (q QueueingDiscipline) String() string {
	if q >= 0 && int(q) < len(qdiscNames) {
		return qdiscNames[q]
	}
	return fmt.Sprintf("QueueingDiscipline(%d)", int(q))
}

// Get implements flag.Getter.Get.
func (q *QueueingDiscipline) Get() any { return *q }

// Config is the qdisc configuration, with runsc's field names.
type Config struct {
	// QDisc is the queueing discipline: none, fifo (the default) or tbf.
	QDisc QueueingDiscipline
	// TBFRate and TBFPeakRate are in bytes per second; TBFBurst, TBFMTU and
	// TBFLimit in bytes. 0 means unset.
	TBFRate     uint64
	TBFBurst    uint64
	TBFPeakRate uint64
	TBFMTU      uint64
	TBFLimit    uint64
	// TBFLatency bounds the time a packet may wait; 0 means unset.
	TBFLatency time.Duration
	// IngressRate (bytes per second), IngressBurst and IngressLimit
	// (bytes) and IngressLatency shape what the sandbox receives, as a tbf
	// on an ifb device does (package ingress). IngressRate 0 means the
	// receive direction is not shaped.
	IngressRate    uint64
	IngressBurst   uint64
	IngressLimit   uint64
	IngressLatency time.Duration
	// TBFChild is the tbf's queue: "" (its byte FIFO) or "fq_codel".
	TBFChild string
	// fq_codel's knobs, for --qdisc=fq_codel and --qdisc-tbf-child=fq_codel
	// (package fqcodel; 0 means Linux's default): packets, flows, bytes,
	// bytes, packets; durations; and tc's noecn.
	FQLimit       uint64
	FQFlows       uint64
	FQQuantum     uint64
	FQMemoryLimit uint64
	FQDropBatch   uint64
	FQTarget      time.Duration
	FQInterval    time.Duration
	FQNoECN       bool
	// AllowFlagOverride lets annotations set any flag this package owns.
	AllowFlagOverride bool
	// Notices say what ApplyAnnotations did that the pod's author may not
	// expect: a Kubernetes bandwidth above the operator's ceiling, held to
	// the ceiling. Warnings returns them. They are a field, not a log line,
	// because runsc applies annotations in "runsc create", before the
	// sandbox's boot log exists, and hands the Config to the boot process
	// with each link (Args does not carry them).
	Notices []string

	// operator holds the operator's values, the ceilings for annotations.
	operator *Config
}

// rateValue is a flag.Value for a rate: bytes/s, or tc's units.
type rateValue uint64

func (v *rateValue) Set(s string) error {
	n, err := rate.ParseRate(s)
	*v = rateValue(n)
	return err
}
func (v *rateValue) String() string { return fmt.Sprint(uint64(*v)) }
func (v *rateValue) Get() any       { return uint64(*v) }

// sizeValue is a flag.Value for a size: bytes, or tc's units.
type sizeValue uint64

func (v *sizeValue) Set(s string) error {
	n, err := rate.ParseSize(s)
	*v = sizeValue(n)
	return err
}
func (v *sizeValue) String() string { return fmt.Sprint(uint64(*v)) }
func (v *sizeValue) Get() any       { return uint64(*v) }

const (
	rateHelp = "bytes/s as a bare number (as runsc), or with tc's units: 10mbit, 1gbit, 125kbps"
	sizeHelp = "bytes as a bare number (as runsc), or with tc's units: 64kb, 1mb, 1mbit"
)

// RegisterFlags registers the qdisc flags and --allow-flag-override on fs.
func RegisterFlags(fs *flag.FlagSet) {
	RegisterQDiscFlags(fs)
	fs.Bool(FlagAllowFlagOverride, false, "allow OCI annotations (dev.gvisor.flag.*) to set any qdisc flag, not only to tighten shaping.")
}

// RegisterQDiscFlags registers the qdisc flags on fs, but not
// --allow-flag-override: for a runtime that has that flag already (runsc),
// which NewFromFlags then reads as the operator's switch.
func RegisterQDiscFlags(fs *flag.FlagSet) {
	q := QDiscFIFO
	fs.Var(&q, FlagQDisc, "queueing discipline on the sandbox's non-loopback NICs: none, fifo, tbf or fq_codel.")
	fs.Var(new(rateValue), FlagTBFRate, "tbf: egress rate limit; "+rateHelp+". Required with --qdisc=tbf.")
	fs.Var(new(sizeValue), FlagTBFBurst, "tbf: bucket depth, the most sent at once; "+sizeHelp+". Required with --qdisc=tbf; at least the NIC's MTU plus header.")
	fs.Var(new(rateValue), FlagTBFPeakRate, "tbf: optional peak rate of a second bucket that paces bursts, above --qdisc-tbf-rate; "+rateHelp+".")
	fs.Var(new(sizeValue), FlagTBFMTU, "tbf: the peak bucket's depth (tc's mtu/minburst), required with --qdisc-tbf-peakrate; "+sizeHelp+".")
	fs.Var(new(sizeValue), FlagTBFLimit, "tbf: most bytes queued; "+sizeHelp+". Default: 1000 full-size packets. Excludes --qdisc-tbf-latency.")
	fs.Duration(FlagTBFLatency, 0, "tbf: most time a packet may wait (limit = rate*latency + burst), e.g. 50ms. Excludes --qdisc-tbf-limit.")
	fs.Var(new(rateValue), FlagIngressRate, "ingress: rate limit on what the sandbox receives (a tbf on the receive path, as Linux's ifb); "+rateHelp+". Default: not shaped.")
	fs.Var(new(sizeValue), FlagIngressBurst, "ingress: bucket depth; "+sizeHelp+". Required with --qdisc-ingress-rate; at least the NIC's MTU plus header.")
	fs.Var(new(sizeValue), FlagIngressLimit, "ingress: most bytes queued; "+sizeHelp+". Default: 1000 full-size packets. Excludes --qdisc-ingress-latency.")
	fs.Duration(FlagIngressLatency, 0, "ingress: most time a received packet may wait, e.g. 25ms. Excludes --qdisc-ingress-limit.")
	registerFQCoDelFlags(fs)
}

// Owns reports whether name (without dashes) is a flag RegisterQDiscFlags
// registers: a runtime hands annotations for these to ApplyAnnotations and
// applies the others by its own rules.
func Owns(name string) bool {
	if name == FlagQDisc || name == FlagTBFChild || name == FlagFQCoDelFlows || name == FlagFQCoDelQuantum || name == FlagFQCoDelDropBatch || name == FlagFQCoDelECN {
		return true
	}
	if _, ok := fqCeilings[name]; ok {
		return true
	}
	_, ceiling := ceilingKnobs[name]
	_, duration := durationKnobs[name]
	return ceiling || duration
}

// Args returns the flags that give c's qdisc values to a FlagSet on which
// RegisterQDiscFlags registered them: "--name=value" for each value that is
// not the flag's default, in the bare units (bytes/s, bytes) and Go
// durations that parse back exactly. A runtime that re-executes itself
// (runsc starts the sandbox's boot process with its flags) passes these on,
// so the boot process sees the configuration after annotations.
// --allow-flag-override is the runtime's to pass.
func (c *Config) Args() []string {
	var args []string
	if c.QDisc != QDiscFIFO {
		args = append(args, fmt.Sprintf("--%s=%s", FlagQDisc, c.QDisc))
	}
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{FlagTBFRate, c.TBFRate}, {FlagTBFBurst, c.TBFBurst}, {FlagTBFPeakRate, c.TBFPeakRate},
		{FlagTBFMTU, c.TBFMTU}, {FlagTBFLimit, c.TBFLimit},
	} {
		if f.v != 0 {
			args = append(args, fmt.Sprintf("--%s=%d", f.name, f.v))
		}
	}
	if c.TBFLatency != 0 {
		args = append(args, fmt.Sprintf("--%s=%v", FlagTBFLatency, c.TBFLatency))
	}
	for _, f := range []struct {
		name string
		v    uint64
	}{{FlagIngressRate, c.IngressRate}, {FlagIngressBurst, c.IngressBurst}, {FlagIngressLimit, c.IngressLimit}} {
		if f.v != 0 {
			args = append(args, fmt.Sprintf("--%s=%d", f.name, f.v))
		}
	}
	if c.IngressLatency != 0 {
		args = append(args, fmt.Sprintf("--%s=%v", FlagIngressLatency, c.IngressLatency))
	}
	return append(args, c.fqCoDelArgs()...)
}

// NewFromFlags returns the Config that fs's qdisc flags give, validated.
// RegisterFlags must have registered them and fs must have been parsed.
func NewFromFlags(fs *flag.FlagSet) (*Config, error) {
	c := &Config{}
	get := func(name string) (any, error) {
		f := fs.Lookup(name)
		if f == nil {
			return nil, fmt.Errorf("flag --%s is not registered; call RegisterFlags first", name)
		}
		return f.Value.(flag.Getter).Get(), nil
	}
	var errs []error
	for _, f := range append([]flagSetter{
		{FlagQDisc, func(v any) { c.QDisc = v.(QueueingDiscipline) }},
		{FlagTBFRate, func(v any) { c.TBFRate = v.(uint64) }},
		{FlagTBFBurst, func(v any) { c.TBFBurst = v.(uint64) }},
		{FlagTBFPeakRate, func(v any) { c.TBFPeakRate = v.(uint64) }},
		{FlagTBFMTU, func(v any) { c.TBFMTU = v.(uint64) }},
		{FlagTBFLimit, func(v any) { c.TBFLimit = v.(uint64) }},
		{FlagTBFLatency, func(v any) { c.TBFLatency = v.(time.Duration) }},
		{FlagIngressRate, func(v any) { c.IngressRate = v.(uint64) }},
		{FlagIngressBurst, func(v any) { c.IngressBurst = v.(uint64) }},
		{FlagIngressLimit, func(v any) { c.IngressLimit = v.(uint64) }},
		{FlagIngressLatency, func(v any) { c.IngressLatency = v.(time.Duration) }},
		{FlagAllowFlagOverride, func(v any) { c.AllowFlagOverride = v.(bool) }},
	}, c.fqCoDelFlagSetters()...) {
		v, err := get(f.name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.set(v)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.operator = c.snapshot()
	return c, nil
}

// flagSetter reads one flag's value into a Config.
type flagSetter struct {
	name string
	set  func(any)
}

// snapshot returns a copy of c's values, without its operator snapshot.
func (c *Config) snapshot() *Config {
	s := *c
	s.operator = nil
	return &s
}

// String returns the Config as the flags Args gives, "--qdisc=tbf
// --qdisc-tbf-rate=1250000 ...", or "--qdisc=fifo" for the defaults.
func (c Config) String() string {
	if args := c.Args(); len(args) > 0 {
		return strings.Join(args, " ")
	}
	return "--" + FlagQDisc + "=" + QDiscFIFO.String()
}

// Validate checks that the Config describes a qdisc that can be built: tbf
// needs a rate and a burst; a peak rate needs an MTU and must exceed the
// rate; limit and latency exclude each other; sizes fit what tbf.Config
// and fqcodel.Config hold; and every bound of tbf.Config.Check and
// fqcodel.Config.Check (Linux's, or ours) holds, but those that depend on
// the NIC, which NewQueueingDiscipline and NewIngress check. Every error
// names the flag to change and the bound.
func (c *Config) Validate() error {
	if c.QDisc < QDiscNone || c.QDisc > QDiscFQCoDel {
		return fmt.Errorf("--%s: invalid value %v: choose none, fifo, tbf or fq_codel", FlagQDisc, c.QDisc)
	}
	for _, s := range []struct {
		flag string
		v    uint64
	}{{FlagTBFBurst, c.TBFBurst}, {FlagTBFMTU, c.TBFMTU}, {FlagTBFLimit, c.TBFLimit}, {FlagIngressBurst, c.IngressBurst}, {FlagIngressLimit, c.IngressLimit}} {
		if s.v > math.MaxUint32 {
			return fmt.Errorf("--%s=%d: at most %d bytes (4 GiB) can be configured", s.flag, s.v, uint64(math.MaxUint32))
		}
	}
	switch {
	case c.TBFLatency < 0:
		return fmt.Errorf("--%s=%v: latency must be positive", FlagTBFLatency, c.TBFLatency)
	case c.TBFLimit != 0 && c.TBFLatency != 0:
		return fmt.Errorf("--%s and --%s both bound the queue; give one of them", FlagTBFLimit, FlagTBFLatency)
	case c.TBFPeakRate != 0 && c.TBFMTU == 0:
		return fmt.Errorf("--%s needs --%s, the peak bucket's depth (for example the NIC's MTU plus header, 1514)", FlagTBFPeakRate, FlagTBFMTU)
	case c.TBFPeakRate == 0 && c.TBFMTU != 0:
		return fmt.Errorf("--%s is the peak bucket's depth and needs --%s", FlagTBFMTU, FlagTBFPeakRate)
	case c.TBFPeakRate != 0 && c.TBFRate != 0 && c.TBFPeakRate <= c.TBFRate:
		return fmt.Errorf("--%s=%s must be above --%s=%s", FlagTBFPeakRate, rate.FormatRate(c.TBFPeakRate), FlagTBFRate, rate.FormatRate(c.TBFRate))
	}
	if err := c.validateIngress(); err != nil {
		return err
	}
	if err := c.validateFQCoDel(); err != nil {
		return err
	}
	if c.QDisc == QDiscTBF {
		if c.TBFRate == 0 {
			return fmt.Errorf("--%s=tbf requires --%s (bytes/s, or with units such as 10mbit)", FlagQDisc, FlagTBFRate)
		}
		if c.TBFBurst == 0 {
			return fmt.Errorf("--%s=tbf requires --%s (bytes, at least the NIC's MTU plus header, such as 1514)", FlagQDisc, FlagTBFBurst)
		}
		// Every bound of tbf's that does not depend on the NIC (New
		// checks the rest): a latency whose limit overflows 32 bits, a
		// limit below one burst, a bucket shorter than 1 ns.
		if err := c.TBFConfig().Check(); err != nil {
			return flagError(err, tbfFlags)
		}
	}
	if c.IngressRate != 0 {
		if err := c.IngressConfig().Check(); err != nil {
			return flagError(err, ingressFlags)
		}
	}
	return nil
}

// validateIngress is Validate for the receive direction's flags.
func (c *Config) validateIngress() error {
	switch {
	case c.IngressLatency < 0:
		return fmt.Errorf("--%s=%v: latency must be positive", FlagIngressLatency, c.IngressLatency)
	case c.IngressLimit != 0 && c.IngressLatency != 0:
		return fmt.Errorf("--%s and --%s both bound the queue; give one of them", FlagIngressLimit, FlagIngressLatency)
	case c.IngressRate == 0 && (c.IngressBurst != 0 || c.IngressLimit != 0 || c.IngressLatency != 0):
		return fmt.Errorf("--%s, --%s and --%s shape the receive direction and need --%s (bytes/s, or with units such as 10mbit)", FlagIngressBurst, FlagIngressLimit, FlagIngressLatency, FlagIngressRate)
	case c.IngressRate != 0 && c.IngressBurst == 0:
		return fmt.Errorf("--%s requires --%s (bytes, at least the NIC's MTU plus header, such as 1514)", FlagIngressRate, FlagIngressBurst)
	}
	return nil
}

// knob is an annotation-settable flag: how to read a value, and where it
// goes in a Config.
type knob struct {
	parse func(string) (uint64, error)
	field func(*Config) *uint64
	show  func(uint64) string
}

var ceilingKnobs = map[string]knob{
	FlagTBFRate:      {rate.ParseRate, func(c *Config) *uint64 { return &c.TBFRate }, showRate},
	FlagTBFBurst:     {rate.ParseSize, func(c *Config) *uint64 { return &c.TBFBurst }, showSize},
	FlagTBFPeakRate:  {rate.ParseRate, func(c *Config) *uint64 { return &c.TBFPeakRate }, showRate},
	FlagTBFMTU:       {rate.ParseSize, func(c *Config) *uint64 { return &c.TBFMTU }, showSize},
	FlagTBFLimit:     {rate.ParseSize, func(c *Config) *uint64 { return &c.TBFLimit }, showSize},
	FlagIngressRate:  {rate.ParseRate, func(c *Config) *uint64 { return &c.IngressRate }, showRate},
	FlagIngressBurst: {rate.ParseSize, func(c *Config) *uint64 { return &c.IngressBurst }, showSize},
	FlagIngressLimit: {rate.ParseSize, func(c *Config) *uint64 { return &c.IngressLimit }, showSize},
}

// durationKnobs are the annotation-settable latencies.
var durationKnobs = map[string]func(*Config) *time.Duration{
	FlagTBFLatency:     func(c *Config) *time.Duration { return &c.TBFLatency },
	FlagIngressLatency: func(c *Config) *time.Duration { return &c.IngressLatency },
}

func showRate(v uint64) string { return fmt.Sprintf("%d bytes/s (%s)", v, rate.FormatRate(v)) }
func showSize(v uint64) string { return fmt.Sprintf("%d bytes", v) }

// ApplyAnnotations applies the dev.gvisor.flag.* annotations this package
// owns, under the policy in the package doc. It is atomic: on error the
// Config is unchanged.
func (c *Config) ApplyAnnotations(annotations map[string]string) error {
	if c.operator == nil {
		c.operator = c.snapshot()
	}
	op := c.operator
	next := *c
	next.Notices = append([]string(nil), c.Notices...) // c's stay as they are if the set is refused
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if strings.HasPrefix(k, AnnotationPrefix) || k == AnnotationKubeEgress || k == AnnotationKubeIngress {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // the first error is the same whatever the map order
	var applied []string
	for _, key := range keys {
		name, value := strings.TrimPrefix(key, AnnotationPrefix), annotations[key]
		refuse := func(format string, args ...any) error {
			return fmt.Errorf("annotation %s=%q: %s", key, value, fmt.Sprintf(format, args...))
		}
		override := fmt.Sprintf("requires the runtime flag --%s", FlagAllowFlagOverride)
		if key == AnnotationKubeEgress || key == AnnotationKubeIngress {
			r, err := ParseKubeBandwidth(value)
			if err != nil {
				return refuse("%v", err)
			}
			next.applyKube(op, key, value, r)
			applied = append(applied, key)
			continue
		}
		switch name {
		case FlagAllowFlagOverride:
			return refuse("--%s is the operator's and cannot be set by an annotation", FlagAllowFlagOverride)
		case FlagQDisc:
			var q QueueingDiscipline
			if err := q.Set(value); err != nil {
				return refuse("%v", err)
			}
			if !qdiscMayReplace(q, op.QDisc) && !op.AllowFlagOverride {
				return refuse("only tbf (which only tightens shaping), or fq_codel in place of fifo or none, may be selected; qdisc=%s over the operator's %s %s", q, op.QDisc, override)
			}
			next.QDisc = q
		case FlagTBFLatency, FlagIngressLatency:
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 {
				return refuse("want a positive duration such as 50ms")
			}
			field := durationKnobs[name]
			if ceiling := *field(op); !op.AllowFlagOverride && ceiling != 0 && d > ceiling {
				return refuse("exceeds the operator's ceiling --%s=%v; raising it %s", name, ceiling, override)
			}
			*field(&next) = d
		default:
			if handled, err := applyFQCoDelAnnotation(name, value, op, &next); handled {
				if err != nil {
					return refuse("%v", err)
				}
				break
			}
			k, ok := ceilingKnobs[name]
			if !ok {
				continue // a flag the runtime owns
			}
			v, err := k.parse(value)
			if err != nil {
				return refuse("%v", err)
			}
			if v == 0 && !op.AllowFlagOverride {
				return refuse("0 would unset --%s; only a non-zero value no greater than the operator's may be set, or the change %s", name, override)
			}
			if ceiling := *k.field(op); !op.AllowFlagOverride && ceiling != 0 && v > ceiling {
				return refuse("%s exceeds the operator's ceiling --%s=%s; raising it %s", k.show(v), name, k.show(ceiling), override)
			}
			*k.field(&next) = v
		}
		applied = append(applied, key)
	}
	if err := next.Validate(); err != nil {
		return fmt.Errorf("annotations %s give an invalid configuration: %w", strings.Join(applied, ", "), err)
	}
	*c = next
	return nil
}

// QDisc is what every qdisc NewQueueingDiscipline builds also is: one that
// reports `tc -s` statistics and describes itself as `tc qdisc show` does
// ("tbf rate 10Mbit burst 12500b lat 50ms").
type QDisc interface {
	stack.QueueingDiscipline
	Stats() qdisc.Stats
	String() string
}

var _, _, _ QDisc = (*fifo.Discipline)(nil), (*tbf.Discipline)(nil), (*fqcodel.Discipline)(nil)

// NewQueueingDiscipline builds the qdisc the Config describes for lower:
// nil for none (the NIC then writes straight to the link), fifo with one
// queue per GOMAXPROCS of FIFOQueueLen packets, as runsc does, or tbf.
// Every qdisc it returns is a QDisc. An error from tbf.New names the flag
// to change.
func (c *Config) NewQueueingDiscipline(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch c.QDisc {
	case QDiscNone:
		return nil, nil
	case QDiscFIFO:
		return fifo.New(lower, runtime.GOMAXPROCS(0), FIFOQueueLen), nil
	case QDiscFQCoDel:
		q, err := fqcodel.New(lower, clock, c.FQCoDelConfig())
		if err != nil {
			return nil, flagError(err, fqCoDelFlags)
		}
		return q, nil
	}
	q, err := tbf.New(lower, clock, c.TBFConfig())
	if err != nil {
		return nil, flagError(err, tbfFlags)
	}
	return q, nil
}

// flagError names the flag, of those flags maps the fields of a
// tbf.ConfigError to (fqCoDelFlags those of an fqcodel.ConfigError), that
// the error is about. A field no flag sets keeps the qdisc's own error,
// which names the field.
func flagError(err error, flags map[string]string) error {
	var ce *tbf.ConfigError
	if errors.As(err, &ce) {
		if name, ok := flags[ce.Field]; ok {
			return fmt.Errorf("--%s: %s", name, ce.Msg)
		}
		return err
	}
	var fe *fqcodel.ConfigError
	if errors.As(err, &fe) {
		if name, ok := fqCoDelFlags[fe.Field]; ok {
			return fmt.Errorf("--%s: %s", name, fe.Msg)
		}
	}
	return err
}

// NewIngress wraps child in the receive-direction shaper the Config
// describes (package ingress), for a runtime to use as the NIC's link
// endpoint in place of child; it returns nil when the receive direction is
// not shaped. An error names the flag to change.
func (c *Config) NewIngress(child stack.LinkEndpoint, clock tcpip.Clock) (*ingress.Endpoint, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.IngressRate == 0 {
		return nil, nil
	}
	e, err := ingress.New(child, clock, c.IngressConfig())
	if err != nil {
		return nil, flagError(err, ingressFlags)
	}
	return e, nil
}

// IngressConfig returns the receive-direction tbf.Config the flags
// describe, with one queue per GOMAXPROCS. Validate first.
func (c *Config) IngressConfig() tbf.Config {
	return tbf.Config{
		Rate:    c.IngressRate,
		Burst:   uint32(c.IngressBurst),
		Limit:   uint32(c.IngressLimit),
		Latency: c.IngressLatency,
		Queues:  min(runtime.GOMAXPROCS(0), tbf.MaxQueues),
	}
}

// ingressFlags maps tbf.ConfigError fields to the ingress flags.
var ingressFlags = map[string]string{
	"rate":     FlagIngressRate,
	"burst":    FlagIngressBurst,
	"limit":    FlagIngressLimit,
	"latency":  FlagIngressLatency,
	"queues":   FlagIngressRate,
	"overhead": FlagIngressBurst,
}

// Warnings returns what the operator should know about a valid Config
// that works but cannot be held as precisely as asked: for tbf, a burst
// shorter than the platform's timer lateness (tbf.Config.CheckPrecision);
// for fq_codel under a tbf, a target shorter than a host-GSO packet takes
// at the rate. Each names the flag to change. The Notices of
// ApplyAnnotations come first.
func (c *Config) Warnings() []string {
	w := append([]string(nil), c.Notices...)
	if c.QDisc == QDiscTBF {
		if err := c.TBFConfig().CheckPrecision(); err != nil {
			w = append(w, fmt.Sprintf("--%s: %v", FlagTBFBurst, err))
		}
	}
	if c.IngressRate != 0 {
		if err := c.IngressConfig().CheckPrecision(); err != nil {
			w = append(w, fmt.Sprintf("--%s: %v", FlagIngressBurst, err))
		}
	}
	return append(w, c.fqCoDelWarnings()...)
}

// TBFConfig returns the tbf.Config the flags describe, with one queue per
// GOMAXPROCS, as runsc gives fifo. Validate first: it assumes sizes fit in
// 32 bits.
func (c *Config) TBFConfig() tbf.Config {
	t := tbf.Config{
		Rate:     c.TBFRate,
		Burst:    uint32(c.TBFBurst),
		PeakRate: c.TBFPeakRate,
		MTU:      uint32(c.TBFMTU),
		Limit:    uint32(c.TBFLimit),
		Latency:  c.TBFLatency,
		Queues:   min(runtime.GOMAXPROCS(0), tbf.MaxQueues),
	}
	if c.TBFChild == ChildFQCoDel {
		fq := c.FQCoDelConfig()
		t.FQCoDel, t.Queues = &fq, 1 // fq_codel is one qdisc
	}
	return t
}

// tbfFlags maps tbf.ConfigError fields to flags.
var tbfFlags = map[string]string{
	"rate":     FlagTBFRate,
	"burst":    FlagTBFBurst,
	"peakrate": FlagTBFPeakRate,
	"mtu":      FlagTBFMTU,
	"limit":    FlagTBFLimit,
	"latency":  FlagTBFLatency,
	"queues":   FlagQDisc,
	"overhead": FlagTBFBurst,
}
