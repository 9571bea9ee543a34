package runscflags

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Config is the qdisc configuration, with runsc's field names. Each
// field's flag, unit, default and annotation rule are in Flags.
type Config struct {
	// QDisc is the queueing discipline: none, fifo (the default), or any
	// other registered kind (tbf, fq_codel, htb, cake, fq, netem, ...).
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
	// TBFPacketRate (packets per second) and TBFPacketBurst (packets) are
	// the tbf's packet bucket (package tbf's PacketRate, PacketBurst); 0
	// means none. With a packet rate the byte rate may be 0: a ceiling of
	// packets alone.
	TBFPacketRate  uint64
	TBFPacketBurst uint64
	// TBFOverhead and TBFMPU (bytes) and TBFLinkLayer ("" for ethernet,
	// "atm") are what the tbf charges each packet, tc-tbf's overhead,
	// mpu and linklayer (package tbf's Overhead, MPU and ATM).
	TBFOverhead  uint64
	TBFMPU       uint64
	TBFLinkLayer string
	// IngressRate (bytes per second), IngressBurst and IngressLimit
	// (bytes) and IngressLatency shape what the sandbox receives, as a tbf
	// on an ifb device does (package ingress). IngressRate 0 means the
	// receive direction is not shaped.
	IngressRate    uint64
	IngressBurst   uint64
	IngressLimit   uint64
	IngressLatency time.Duration
	// IngressPacketRate and IngressPacketBurst are the receive
	// direction's packet bucket, as TBFPacketRate and TBFPacketBurst.
	IngressPacketRate  uint64
	IngressPacketBurst uint64
	// TBFChild is the kind grafted under the tbf (Kind.Graft): "" (fq,
	// the default), "fifo" (its own byte FIFO), "fq_codel", or any other
	// registered kind that can be a child (Kind.Queue).
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
	FQCEThreshold time.Duration
	// HTB is --qdisc=htb's qdisc, classes and filters, and IngressHTB
	// those on what the sandbox receives, as htb scripts (see
	// htb.Script): "" for none.
	HTB        string
	IngressHTB string
	// Cake is --qdisc=cake's settings and IngressCake cake's on what the
	// sandbox receives, in tc-cake's words as cake.Config.String writes
	// them: "" for cake's defaults (Cake) or none (IngressCake).
	Cake        string
	IngressCake string
	// CakeBandwidth .. CakeSplitGSO are --qdisc-cake-bandwidth ..
	// --qdisc-cake-split-gso: one of cake's settings each, as the flag was
	// given ("" for unset), read after Cake's words (cakeText).
	CakeBandwidth string
	CakeIsolation string
	CakeDiffserv  string
	CakeAckFilter string
	CakeRTT       string
	CakeOverhead  string
	CakeMemlimit  string
	CakeWash      string
	CakeSplitGSO  string
	// IngressQDisc is --qdisc-ingress, the kind that shapes what the
	// sandbox receives: "" for the one the flags above imply (tbf with a
	// rate, htb, cake, or none), or any registered kind (kinds.go).
	IngressQDisc string
	// Node is --qdisc-node, the file of the node's class tree (package
	// node), "" for none; NodeParent the class the sandbox's hangs from
	// ("" for the tree's root), NodeRate and NodeCeil its rate and ceil
	// (bytes/s; ceil 0: the parent's), NodePrio its prio. The Ingress
	// ones are the same for what the sandbox receives.
	Node, NodeParent                 string
	NodeRate, NodeCeil, NodePrio     uint64
	IngressNode, IngressNodeParent   string
	IngressNodeRate, IngressNodeCeil uint64
	IngressNodePrio                  uint64
	// Words are the registered kinds' words flags (--qdisc-fifo,
	// --qdisc-ingress-fq-codel, a kind of another package's), by flag
	// name; nil for none. Set and Get read and write them; a Config
	// copied shares the map until either changes it (wordsRef.set).
	Words map[string]string
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
	// resets are the quota resets a change (Changed) asks for, for
	// Change to apply; a Config in force has none.
	resets []quotaReset
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
	return "--" + FlagQDisc + "=" + byName[FlagQDisc].Default
}

// Validate checks that the Config describes a qdisc that can be built: tbf
// needs a rate and a burst; a peak rate needs an MTU and must exceed the
// rate; limit and latency exclude each other; every value is within its
// flag's Linux bound (Flags) and fits what tbf.Config and fqcodel.Config
// hold; and every bound of tbf.Config.Check and fqcodel.Config.Check
// (Linux's, or ours) holds, but those that depend on the NIC, which
// NewQueueingDiscipline and NewIngress check. Every error names the flag
// to change and the bound.
func (c *Config) Validate() error {
	if !c.QDisc.valid() {
		return fmt.Errorf("--%s: invalid value %v: choose %s", FlagQDisc, c.QDisc, orList(qdiscChoices()))
	}
	if err := c.validateKinds(); err != nil {
		return err
	}
	if err := c.validateHTB(); err != nil {
		return err
	}
	if err := c.validateCake(); err != nil {
		return err
	}
	for i := range Flags {
		if err := Flags[i].checkBound(c); err != nil {
			return err
		}
	}
	switch {
	case c.TBFLatency < 0:
		return fmt.Errorf("--%s=%v: latency must be positive", FlagTBFLatency, c.TBFLatency)
	case c.TBFLimit != 0 && c.TBFLatency != 0:
		return fmt.Errorf("--%s and --%s both bound the queue; give one of them", FlagTBFLimit, FlagTBFLatency)
	case c.TBFPeakRate != 0 && c.TBFMTU == 0:
		return fmt.Errorf("--%s needs --%s, the peak bucket's depth (for example the NIC's MTU plus header, 1514)", FlagTBFPeakRate, FlagTBFMTU)
	case c.TBFPeakRate != 0 && c.TBFRate != 0 && c.TBFPeakRate <= c.TBFRate:
		return fmt.Errorf("--%s=%s must be above --%s=%s", FlagTBFPeakRate, rate.FormatRate(c.TBFPeakRate), FlagTBFRate, rate.FormatRate(c.TBFRate))
	}
	if err := c.validateIngress(); err != nil {
		return err
	}
	if err := c.validateFQCoDel(); err != nil {
		return err
	}
	if err := c.validateNode(); err != nil {
		return err
	}
	if c.QDisc.Is(tbf.Kind) {
		if c.TBFRate == 0 && c.TBFPacketRate == 0 {
			return fmt.Errorf("--%s=tbf requires --%s (bytes/s, or with units such as 10mbit) or --%s (packets/s)", FlagQDisc, FlagTBFRate, FlagTBFPacketRate)
		}
		if c.TBFRate != 0 && c.TBFBurst == 0 {
			return fmt.Errorf("--%s=tbf requires --%s (bytes, at least the NIC's MTU plus header, such as 1514)", FlagQDisc, FlagTBFBurst)
		}
		// Every bound of tbf's that does not depend on the NIC (New
		// checks the rest): a latency whose limit overflows 32 bits, a
		// bucket shorter than 1 ns.
		if err := c.TBFConfig().Check(); err != nil {
			return flagError(err, EgressCeiling)
		}
	}
	if c.IngressShaped() {
		if err := c.IngressConfig().Check(); err != nil {
			return flagError(err, IngressCeiling)
		}
	}
	return nil
}

// checkBound refuses a number past f's Linux bound or, where the qdisc's
// Check refuses that with its own error (Linux.Checked), past what the
// 32-bit field of tbf.Config or fqcodel.Config holds.
func (f *Flag) checkBound(c *Config) error {
	p, ok := f.field(c).(*uint64)
	if !ok || f.Linux.Max == 0 {
		return nil
	}
	most := f.Linux.Max
	if f.Linux.Checked {
		most = math.MaxUint32
	}
	if *p > most {
		return fmt.Errorf("--%s=%d: out of range; at most %s (%s)", f.Name, *p, f.show(f.Linux.Max), f.Linux.Bound)
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
	}
	if err := c.needsRate(IngressCeiling, "the receive direction"); err != nil {
		return err
	}
	if c.IngressRate != 0 && c.IngressBurst == 0 {
		return fmt.Errorf("--%s requires --%s (bytes, at least the NIC's MTU plus header, such as 1514)", FlagIngressRate, FlagIngressBurst)
	}
	return nil
}

// validateFQCoDel is Validate for fq_codel's flags: a tbf with fq_codel as
// its child has no byte limit or latency of its own, whose bound
// fq_codel's limits could exceed, and the knobs make a valid
// fqcodel.Config.
func (c *Config) validateFQCoDel() error {
	if c.TBFChild == ChildFQCoDel && (c.TBFLimit != 0 || c.TBFLatency != 0) {
		return fmt.Errorf("--%s=fq_codel: fq_codel's limits bound the queue under the tbf; leave --%s and --%s unset", FlagTBFChild, FlagTBFLimit, FlagTBFLatency)
	}
	if err := c.FQCoDelConfig().Check(); err != nil {
		return flagError(err, EgressCeiling)
	}
	return nil
}

// TBFConfig returns the tbf.Config the flags describe, with one queue per
// GOMAXPROCS with the byte FIFO (--qdisc-tbf-child=fifo), as runsc
// gives fifo, or one with a flow-queueing child (fq, the default, or
// fq_codel: one qdisc), which NewTBFChild makes. Validate first: it
// assumes sizes fit in 32 bits.
func (c *Config) TBFConfig() tbf.Config {
	t := c.tbfConfig(EgressCeiling)
	if c.TBFChild != ChildFIFO {
		t.Lanes = 1
	}
	return t
}

// NewTBFChild returns the tbf's child the flags describe, for a link whose
// MTU plus header is mtu: the queue of the kind --qdisc-tbf-child names
// (Kind.Queue), with the options its flags give it: fq with Linux's
// defaults (unset, or --qdisc-tbf-child=fq; the tbf's limit or latency,
// if set, bounds its bytes), fq_codel with its knobs
// (--qdisc-tbf-child=fq_codel), or nil for the tbf's byte FIFO
// (--qdisc-tbf-child=fifo).
func (c *Config) NewTBFChild(mtu uint32) (qdisc.Queue, error) {
	child, err := c.childOf(EgressCeiling)("")
	if err != nil {
		return nil, err
	}
	q, err := child.NewQueue(mtu)
	if err != nil {
		return nil, flagError(err, EgressCeiling)
	}
	return q, nil
}

// IngressConfig returns the receive-direction tbf.Config the flags
// describe, with one queue per GOMAXPROCS. Validate first.
func (c *Config) IngressConfig() tbf.Config { return c.tbfConfig(IngressCeiling) }

// IngressShaped says whether the flags shape the receive direction: a
// rate or a packet rate.
func (c *Config) IngressShaped() bool { return c.shaped(IngressCeiling) }

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
		CEThreshold: c.FQCEThreshold,
	}
}

// sat32 is v, or the largest uint32 if v is larger.
func sat32(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }
