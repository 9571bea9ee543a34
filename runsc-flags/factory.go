package runscflags

import (
	"errors"
	"fmt"
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

// FIFOQueueLen is the packets each fifo queue holds, as in runsc: fifo's
// default limit.
const FIFOQueueLen = fifo.DefaultLimit

// QDisc is what every qdisc NewQueueingDiscipline builds also is: one that
// reports `tc -s` statistics and describes itself as `tc qdisc show` does
// ("tbf rate 10Mbit burst 12500b lat 50ms").
type QDisc interface {
	stack.QueueingDiscipline
	Stats() qdisc.Stats
	String() string
	qdisc.Shower
}

var _ QDisc = qdisc.Discipline(nil)

// NewQueueingDiscipline builds the qdisc the Config describes for lower:
// nil for none (the NIC then writes straight to the link), or the kind
// --qdisc names, through its Kind (kinds.go), with the options its flags
// give it and what the runtime grafts under it (Kind.Graft: a tbf's
// child, fq unless --qdisc-tbf-child says otherwise; the fq_codel of an
// htb's leaves, with --qdisc-fq-codel-*'s knobs): fifo, by default, with
// one queue per GOMAXPROCS of FIFOQueueLen packets, as runsc does. Every
// qdisc it returns is a QDisc. An error names the flag to change.
func (c *Config) NewQueueingDiscipline(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	in, ok, err := c.kindOf(EgressCeiling)
	if err != nil || !ok {
		return nil, err
	}
	o, err := c.grafted(EgressCeiling, in, frameOf(lower))
	if err != nil {
		return nil, c.buildError(EgressCeiling, in, err)
	}
	q, err := in.kind.New(lower, clock, o)
	if err != nil {
		return nil, c.buildError(EgressCeiling, in, err)
	}
	return q, nil
}

// frameOf is the largest frame link takes: its MTU and link header.
func frameOf(link stack.LinkEndpoint) uint32 { return link.MTU() + uint32(link.MaxHeaderLength()) }

// NewIngress wraps child in the receive-direction shaper the Config
// describes (package ingress): a tbf, htb, cake or any registered kind
// (--qdisc-ingress), for a runtime to use as the NIC's link
// endpoint in place of child. When the receive direction is not shaped
// the Endpoint passes packets up as they come, counted, with no queue,
// until a ceiling is set in place (ingress.Endpoint.Change, runsc qdisc
// change). An error names the flag to change.
func (c *Config) NewIngress(child stack.LinkEndpoint, clock tcpip.Clock) (*ingress.Endpoint, error) {
	return c.newIngress(child, clock, nil)
}

// NewIngressIn is NewIngress for a NIC whose receive direction is nc's
// class of its node: the shaper delivers through the class's uplink,
// which holds what goes up to the class's share. Where the flags give
// the direction no shaper of its own, a fifo holds what waits.
func (c *Config) NewIngressIn(child stack.LinkEndpoint, clock tcpip.Clock, nc *NodeClass) (*ingress.Endpoint, error) {
	return c.newIngress(child, clock, nc)
}

// newIngress is NewIngress, through nc's class if not nil.
func (c *Config) newIngress(child stack.LinkEndpoint, clock tcpip.Clock, nc *NodeClass) (*ingress.Endpoint, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	build, in, err := c.ingressBuild(child, nc != nil)
	if err != nil {
		return nil, err
	}
	if build == nil {
		e, err := ingress.New(child, clock, c.IngressConfig())
		if err != nil {
			return nil, flagError(err, IngressCeiling)
		}
		return e, nil
	}
	if nc != nil {
		inner := build
		build = func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
			up, err := nc.uplink(nil, out, clock)
			if err != nil {
				return nil, err
			}
			return inner(up, link, clock)
		}
	}
	e, err := ingress.NewWhole(child, clock, build)
	if err != nil {
		return nil, c.buildError(IngressCeiling, in, err)
	}
	return e, nil
}

// ingressBuild returns what builds the receive direction's shaper as a
// whole, the kind --qdisc-ingress names or the receive path's flags
// imply, through its Kind (NewTo, with what the runtime grafts under it),
// and that kind; with whole, where the direction is not shaped, the
// default qdisc (--qdisc's default, runsc's fifo) with its defaults. It
// returns nil where ingress.New builds the direction itself: a tbf (the
// ceiling's kind, the Endpoint's own shaper), or none, unless whole.
func (c *Config) ingressBuild(child stack.LinkEndpoint, whole bool) (ingress.BuildWhole, kindIn, error) {
	in, ok, err := c.kindOf(IngressCeiling)
	switch {
	case err != nil:
		return nil, kindIn{}, err
	case ok && in.kind.Name == ceilingKind && !whole, !ok && !whole:
		return nil, kindIn{}, nil
	case !ok:
		if in, err = defaultKind(); err != nil {
			return nil, kindIn{}, err
		}
	}
	o, err := c.grafted(IngressCeiling, in, frameOf(child))
	if err != nil {
		return nil, kindIn{}, c.buildError(IngressCeiling, in, err)
	}
	return func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
		return in.kind.NewTo(out, link, clock, o)
	}, in, nil
}

// defaultKind is the qdisc that holds what a node's class holds back on a
// receive path the flags do not shape: --qdisc's default (runsc's fifo),
// with its defaults. Its errors name no flag of its own (flag "").
func defaultKind() (kindIn, error) {
	name := byName[FlagQDisc].Default
	k, ok := qdisc.Lookup(name)
	if !ok {
		return kindIn{}, fmt.Errorf("no %s qdisc registered to hold what the node's class holds back", name)
	}
	o, err := k.Parse("")
	if err != nil {
		return kindIn{}, err
	}
	return kindIn{kind: &k, opts: o}, nil
}

// buildError names the flag that err, from building in's kind in
// direction d, is about: the flag of the setting it names (a
// qdisc.SettingError) where a flag of the table holds that setting (the
// ceiling's, fq_codel's knobs); otherwise in's words flag, but for a
// kind whose words are held in its knobs' flags (tbf, fq_codel), whose
// error names its setting itself.
func (c *Config) buildError(d Ceiling, in kindIn, err error) error {
	var se qdisc.SettingError
	if errors.As(err, &se) {
		kind, name, msg := se.Setting()
		if flag, ok := settingFlags(d, kind)[name]; ok && !(in.words && kind == in.kind.Name) {
			return fmt.Errorf("--%s: %s", flag, msg)
		}
	}
	if f := byName[in.flag]; in.flag == "" || f != nil && f.alias != nil {
		return err
	}
	return fmt.Errorf("--%s: %w", in.flag, err)
}

// settingFlags maps the settings of kind (tc's names, as its
// qdisc.SettingError gives them) to the flags of the table that set
// them in direction d: the ceiling's (paramFlags), or the kind's knobs'
// (Flag.Linux: fq_codel's).
func settingFlags(d Ceiling, kind string) map[string]string {
	if kind == ceilingKind {
		return paramFlags(d)
	}
	m := map[string]string{}
	for _, f := range Flags {
		if f.Linux.Qdisc == kind && f.Linux.Param != "" {
			m[f.Linux.Param] = f.Name
		}
	}
	return m
}

// flagError names the flag, of those that set a setting of a qdisc in
// direction d (settingFlags), that err (a qdisc.SettingError) is about.
// A setting no flag sets keeps the qdisc's own error, which names it.
func flagError(err error, d Ceiling) error {
	var se qdisc.SettingError
	if errors.As(err, &se) {
		kind, name, msg := se.Setting()
		if flag, ok := settingFlags(d, kind)[name]; ok {
			return fmt.Errorf("--%s: %s", flag, msg)
		}
	}
	return err
}

// Warnings returns what the operator should know about a valid Config
// that works but cannot be held as precisely as asked: for tbf, a burst
// shorter than the platform's timer lateness (tbf.Config.CheckPrecision);
// beside another kind, the tbf's flags, which shape no sandbox at start;
// for fq_codel under a tbf, a target shorter than a host-GSO packet takes
// at the rate. Each names the flag to change. The Notices of
// ApplyAnnotations come first.
func (c *Config) Warnings() []string {
	w := append([]string(nil), c.Notices...)
	if c.QDisc.Is(tbf.Kind) {
		t := c.TBFConfig()
		if child, err := c.NewTBFChild(gsoPacket); err == nil {
			t.Child = child // its Slack: fq_codel's bounds it
		}
		if err := t.CheckPrecision(); err != nil {
			w = append(w, fmt.Sprintf("--%s: %v", FlagTBFBurst, err))
		}
	}
	if c.shaped(EgressCeiling) && !c.QDisc.Is(tbf.Kind) {
		w = append(w, fmt.Sprintf("--%s: the ceiling shapes a tbf, and --%s=%s is not one: it shapes no sandbox at start, only a pod that selects tbf (annotation %s%s=%s); use --%s=%s to shape every sandbox, or put the ceiling over a running sandbox's qdisc with `runsc qdisc change`", FlagTBFRate, FlagQDisc, c.QDisc, AnnotationPrefix, FlagQDisc, ceilingKind, FlagQDisc, ceilingKind))
	}
	if c.IngressRate != 0 {
		if err := c.IngressConfig().CheckPrecision(); err != nil { // the byte bucket's
			w = append(w, fmt.Sprintf("--%s: %v", FlagIngressBurst, err))
		}
	}
	return append(w, c.fqCoDelWarnings()...)
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
	if !c.QDisc.Is(tbf.Kind) || c.TBFChild != ChildFQCoDel || c.TBFRate == 0 {
		return nil
	}
	target := c.FQTarget
	if target == 0 {
		target = fqcodel.DefaultTarget
	}
	largest := min(uint64(gsoPacket), c.TBFBurst)
	if c.TBFMTU != 0 && c.TBFPeakRate != 0 { // mtu bounds nothing without peakrate
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
