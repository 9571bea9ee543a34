package runscflags

import (
	"errors"
	"fmt"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
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

var _, _, _, _, _ QDisc = (*fifo.Discipline)(nil), (*tbf.Discipline)(nil), (*fqcodel.Discipline)(nil), (*htb.Discipline)(nil), (*cake.Discipline)(nil)

// NewQueueingDiscipline builds the qdisc the Config describes for lower:
// nil for none (the NIC then writes straight to the link), tbf (with its
// fq_codel child, if any), fq_codel, htb, cake, or any other registered
// kind with its words (kinds.go): fifo, by default with one queue per
// GOMAXPROCS of FIFOQueueLen packets, as runsc does. Every qdisc it returns is a
// QDisc. An error from tbf.New or fqcodel.New names the flag to change.
func (c *Config) NewQueueingDiscipline(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if in, ok, err := c.kindOf(EgressCeiling); ok || err != nil {
		if err != nil {
			return nil, err
		}
		q, err := in.kind.New(lower, clock, in.opts)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", in.flag, err)
		}
		return q, nil
	}
	switch c.QDisc {
	case QDiscNone:
		return nil, nil
	case QDiscFQCoDel:
		q, err := fqcodel.New(lower, clock, c.FQCoDelConfig())
		if err != nil {
			return nil, flagError(err, fqCoDelFlags)
		}
		return q, nil
	case QDiscHTB:
		cfg, err := c.htbConfig(FlagHTB, c.HTB, classify.Egress, lower.MTU()+uint32(lower.MaxHeaderLength()))
		if err != nil {
			return nil, err
		}
		q, err := htb.New(lower, clock, cfg)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", FlagHTB, err)
		}
		return q, nil
	}
	if c.QDisc == QDiscCake {
		cfg, err := c.CakeConfig()
		if err != nil {
			return nil, err
		}
		q, err := cake.New(lower, clock, cfg)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", FlagCake, err)
		}
		return q, nil
	}
	cfg := c.TBFConfig()
	child, err := c.NewTBFChild(lower.MTU() + uint32(lower.MaxHeaderLength()))
	if err != nil {
		return nil, err
	}
	cfg.Child = child
	q, err := tbf.New(lower, clock, cfg)
	if err != nil {
		return nil, flagError(err, tbfFlags)
	}
	return q, nil
}

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
	build, flag, err := c.ingressBuild(child, nc != nil)
	if err != nil {
		return nil, err
	}
	if build == nil {
		e, err := ingress.New(child, clock, c.IngressConfig())
		if err != nil {
			return nil, flagError(err, ingressFlags)
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
		if flag == "" {
			return nil, flagError(err, ingressFlags)
		}
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return e, nil
}

// ingressBuild returns what builds the receive direction's shaper as a
// whole, and its flag: a registered kind's, htb's or cake's; with
// whole, the tbf or (where the direction is not shaped) a fifo too. It
// returns nil where ingress.New builds the direction's tbf itself.
func (c *Config) ingressBuild(child stack.LinkEndpoint, whole bool) (ingress.BuildWhole, string, error) {
	if in, ok, err := c.kindOf(IngressCeiling); ok || err != nil {
		if err != nil {
			return nil, "", err
		}
		return func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
			return in.kind.NewTo(out, link, clock, in.opts)
		}, in.flag, nil
	}
	if c.IngressHTB != "" {
		cfg, err := c.htbConfig(FlagIngressHTB, c.IngressHTB, classify.Ingress, child.MTU()+uint32(child.MaxHeaderLength()))
		if err != nil {
			return nil, "", err
		}
		return func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
			return asWhole(htb.NewTo(out, link, clock, cfg))
		}, FlagIngressHTB, nil
	}
	if c.IngressCake != "" {
		cfg, err := c.IngressCakeConfig()
		if err != nil {
			return nil, "", err
		}
		return func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
			return asWhole(cake.NewTo(out, link, clock, cfg))
		}, FlagIngressCake, nil
	}
	switch {
	case !whole:
		return nil, "", nil
	case c.IngressShaped():
		cfg := c.IngressConfig()
		return func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
			return asWhole(tbf.NewTo(out, link, clock, cfg))
		}, "", nil
	}
	k, ok := qdisc.Lookup("fifo")
	if !ok {
		return nil, "", fmt.Errorf("no fifo qdisc registered to hold what the node's class holds back")
	}
	opts, err := k.Parse("")
	if err != nil {
		return nil, "", err
	}
	return func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
		return k.NewTo(out, link, clock, opts)
	}, "", nil
}

// asWhole returns what a qdisc's NewTo returned as an ingress.Whole: nil
// (not a nil *Discipline) with an error.
func asWhole[Q ingress.Whole](q Q, err error) (ingress.Whole, error) {
	if err != nil {
		return nil, err
	}
	return q, nil
}

// ingressHTB returns the htb that shapes in's receive direction, nil for
// none.
func ingressHTB(in *ingress.Endpoint) *htb.Discipline {
	if in == nil {
		return nil
	}
	h, _ := in.Whole().(*htb.Discipline)
	return h
}

// ingressCake returns the cake that shapes in's receive direction, nil
// for none.
func ingressCake(in *ingress.Endpoint) *cake.Discipline {
	if in == nil {
		return nil
	}
	c, _ := in.Whole().(*cake.Discipline)
	return c
}

// The flags that set the fields of a tbf.ConfigError (tbfFlags,
// ingressFlags: the ceilings' flags, paramFlags) or an fqcodel.ConfigError
// (fqCoDelFlags), by the fields' tc names (Flag.Linux).
var (
	tbfFlags     = paramFlags(EgressCeiling)
	ingressFlags = paramFlags(IngressCeiling)
	fqCoDelFlags = func() map[string]string {
		m := map[string]string{}
		for _, f := range Flags {
			if f.Linux.Qdisc == "fq_codel" && f.Linux.Param != "" {
				m[f.Linux.Param] = f.Name
			}
		}
		return m
	}()
)

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

// Warnings returns what the operator should know about a valid Config
// that works but cannot be held as precisely as asked: for tbf, a burst
// shorter than the platform's timer lateness (tbf.Config.CheckPrecision);
// for fq_codel under a tbf, a target shorter than a host-GSO packet takes
// at the rate. Each names the flag to change. The Notices of
// ApplyAnnotations come first.
func (c *Config) Warnings() []string {
	w := append([]string(nil), c.Notices...)
	if c.QDisc == QDiscTBF {
		t := c.TBFConfig()
		if child, err := c.NewTBFChild(gsoPacket); err == nil {
			t.Child = child // its Slack: fq_codel's bounds it
		}
		if err := t.CheckPrecision(); err != nil {
			w = append(w, fmt.Sprintf("--%s: %v", FlagTBFBurst, err))
		}
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
	if c.QDisc != QDiscTBF || c.TBFChild != ChildFQCoDel || c.TBFRate == 0 {
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
