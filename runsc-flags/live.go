package runscflags

import (
	"fmt"
	"slices"
	"strings"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// NIC is one NIC's shaping as a runtime built it (NewQueueingDiscipline,
// NewIngress), with the Config in force, for `runsc qdisc show` and
// `runsc qdisc change`.
type NIC struct {
	// Name is the NIC's name.
	Name string
	// link is what the qdisc writes to, and clock its clock: a ceiling
	// set on a fifo or fq_codel is checked against the link.
	link  stack.LinkEndpoint
	clock tcpip.Clock
	// qdisc is the egress qdisc (nil: --qdisc=none), ingress the ingress
	// shaper.
	qdisc   stack.QueueingDiscipline
	ingress *ingress.Endpoint

	mu sync.Mutex
	// +checklocks:mu
	config Config
}

// NewNIC returns the NIC named name whose qdisc (nil for none) writes to
// link, timed by clock, and whose ingress shaper is in (nil: the receive
// direction cannot be shaped), both built from cfg.
func NewNIC(name string, cfg *Config, link stack.LinkEndpoint, clock tcpip.Clock, q stack.QueueingDiscipline, in *ingress.Endpoint) *NIC {
	n := &NIC{Name: name, link: link, clock: clock, qdisc: q, ingress: in}
	n.config = *cfg.snapshot()
	return n
}

// Config returns the Config in force on the NIC.
func (n *NIC) Config() Config {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.config
}

// Show returns what `tc -s qdisc show` and `tc -s class show dev NAME`
// print for the NIC (qdisc.WriteTC): the egress qdisc at the root
// ("qdisc tbf 8001: dev eth0 root refcnt 2 rate ..."; noqueue for none)
// with what is grafted under it and its classes, then the ingress qdisc
// with the receive shaper grafted under it ("qdisc tbf 8002: dev eth0
// parent ffff: rate ..."), each with its counters.
func (n *NIC) Show() string {
	var b strings.Builder
	var h qdisc.Handles
	if q, ok := n.qdisc.(QDisc); ok {
		qdisc.WriteTC(&b, n.Name, "root refcnt 2", q.Show(), &h)
	} else {
		fmt.Fprintf(&b, "qdisc noqueue 0: dev %s root refcnt 2\n %v\n", n.Name, qdisc.Stats{})
	}
	if n.ingress != nil {
		qdisc.WriteTC(&b, n.Name, "parent ffff:fff1", n.ingress.Show(), &h)
	}
	return b.String()
}

// Stats returns the NIC's egress and ingress counters.
func (n *NIC) Stats() (egress, in qdisc.Stats) {
	if q, ok := n.qdisc.(QDisc); ok {
		egress = q.Stats()
	}
	if n.ingress != nil {
		in = n.ingress.Stats()
	}
	return egress, in
}

// Changed returns c with the changes args give ("--name=value" for the
// flags of a Ceiling), as `runsc qdisc change` reads them, validated. A
// rate and a packet rate both 0 removes that direction's ceiling, as a
// 0-sized bucket does in Firecracker, and clears the settings that shape
// it with it (burst, peak rate, packet burst, latency); a packet rate of
// 0 clears the packet burst, and a byte rate of 0 with a packet rate left
// leaves a packet-only ceiling.
func (c *Config) Changed(args []string) (*Config, error) {
	next := c.snapshot()
	next.Notices = nil
	if len(args) == 0 {
		return nil, fmt.Errorf("no change given: give the --qdisc-tbf-* or --qdisc-ingress-* flags to change")
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || !strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("%q: give each change as --flag=value", a)
		}
		f := lookup(name)
		if f == nil {
			return nil, fmt.Errorf("--%s: no such qdisc flag", name)
		}
		if f.alias != nil {
			knobs, err := f.alias.expand(next, value)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", name, err)
			}
			args = slices.Concat(args[:i+1], knobs, args[i+1:]) // the knobs' changes next
			continue
		}
		if f.classes != NotCeiling {
			if err := next.changeClasses(f, value); err != nil {
				return nil, fmt.Errorf("--%s: %w", name, err)
			}
			continue
		}
		if f.words != nil {
			if err := next.Set(name, value); err != nil {
				return nil, err
			}
			continue
		}
		if f.Kind == KindCake || f.Kind == KindCakeKnob {
			if err := next.changeCake(f, value); err != nil {
				return nil, err
			}
			continue
		}
		if !f.live() && !f.fqCoDelLive() {
			return nil, fmt.Errorf("--%s cannot change on a running sandbox (it shapes the qdisc itself, as with Linux's tc qdisc change); the ceilings can: %s; and fq_codel's knobs but --%s", name, liveFlags(), FlagFQCoDelFlows)
		}
		if err := next.Set(name, value); err != nil {
			return nil, err
		}
	}
	next.clearRemoved()
	check := *next
	if check.QDisc == QDiscTBF && check.TBFRate == 0 && check.TBFPacketRate == 0 {
		// A tbf whose ceiling a change removed: valid on a running
		// sandbox (its queue stays), not as a sandbox's start.
		check.QDisc = QDiscFIFO
	}
	if err := check.Validate(); err != nil {
		return nil, err
	}
	return next, nil
}

// step is a checked change of one NIC, to apply.
type step struct {
	nic           *NIC
	next          *Config
	send, receive func() error // the two directions' changes (nil: none)
}

// Change changes the shaping of every NIC as args say (see Changed), in
// place, as one: every NIC's change is checked first, against its own
// link, and if any is refused nothing changes and the error names the
// flag (and the NIC). What is queued stays queued, in order; token state
// follows Linux's tbf_change (package tbf's Change: the buckets start
// full). It returns the Config now in force on each NIC. The NICs are
// locked in the order given for the whole change, so concurrent Changes
// must give them in the same order.
func Change(nics []*NIC, args []string) ([]Config, error) {
	return change(nics, func(cur *Config) (*Config, error) { return cur.Changed(args) })
}

// change changes every NIC, as one, to the Config target returns for the
// Config in force on it (Change). target runs with the NIC locked, so what
// it reads is what the change replaces.
//
// +checklocksignore: every NIC's lock is held, taken in a loop, which the
// analyzer cannot follow.
func change(nics []*NIC, target func(cur *Config) (*Config, error)) ([]Config, error) {
	for _, n := range nics {
		n.mu.Lock()
		defer n.mu.Unlock()
	}
	steps := make([]step, 0, len(nics))
	for _, n := range nics {
		s, err := n.planLocked(target)
		if err != nil {
			if len(nics) > 1 {
				return nil, fmt.Errorf("NIC %q: %w", n.Name, err)
			}
			return nil, err
		}
		steps = append(steps, s)
	}
	out := make([]Config, 0, len(steps))
	for _, s := range steps {
		// A checked change is applied with the same check: it is not
		// refused now (an error here would be a bug, and is returned).
		for _, apply := range []func() error{s.send, s.receive} {
			if apply == nil {
				continue
			}
			if err := apply(); err != nil {
				return nil, fmt.Errorf("NIC %q: applying a checked change: %w", s.nic.Name, err)
			}
		}
		s.nic.config = *s.next
		out = append(out, *s.next)
	}
	return out, nil
}

// planLocked checks the change of n to the Config target returns for
// the one in force, and returns it, to apply.
// +checklocks:n.mu
func (n *NIC) planLocked(target func(cur *Config) (*Config, error)) (step, error) {
	cur := n.config
	next, err := target(&cur)
	if err != nil {
		return step{}, err
	}
	s := step{nic: n, next: next}
	if s.send, err = n.planEgress(&cur, next); err != nil {
		return step{}, err
	}
	if s.receive, err = n.planIngress(&cur, next); err != nil {
		return step{}, err
	}
	next.resets = nil // applied with the step, not kept in force
	return s, nil
}

// planEgress checks the egress part of a change: a tbf changes in place
// (tbf_change); a fifo or fq_codel takes the ceiling over its queue, or
// loses it; fq_codel's knobs change in place (fq_codel_change), alone or
// as a tbf's child; htb's classes change in place (htb_change_class).
func (n *NIC) planEgress(cur, next *Config) (func() error, error) {
	if plan, err := planKind(EgressCeiling, cur, next, n.qdisc); plan != nil || err != nil {
		return plan, err
	}
	if resets := next.resetsOf(FlagHTB); cur.HTB != next.HTB || len(resets) > 0 {
		q, ok := n.qdisc.(*htb.Discipline)
		if !ok {
			return nil, fmt.Errorf("--%s: the sandbox's qdisc is not htb (--%s=%v)", FlagHTB, FlagQDisc, cur.QDisc)
		}
		return planClasses(cur.HTB, next.HTB, q, resets)
	}
	if cur.cakeText() != next.cakeText() {
		q, ok := n.qdisc.(*cake.Discipline)
		if !ok {
			return nil, fmt.Errorf("--%s: the sandbox's qdisc is not cake (--%s=%v)", FlagCake, FlagQDisc, cur.QDisc)
		}
		cfg, err := next.CakeConfig()
		if err != nil {
			return nil, err
		}
		return func() error { return q.Change(cfg) }, nil
	}
	fq, err := n.planFQCoDel(cur, next)
	if err != nil {
		return nil, err
	}
	if sameCeiling(EgressCeiling, cur, next) {
		return fq, nil
	}
	ceiling, err := n.planCeiling(cur, next)
	if err != nil || fq == nil {
		return ceiling, err
	}
	return func() error {
		if err := fq(); err != nil {
			return err
		}
		return ceiling()
	}, nil
}

// planCeiling checks the change of the egress ceiling: a tbf changes in
// place (tbf_change); a fifo or fq_codel takes the ceiling over its
// queue, or loses it.
func (n *NIC) planCeiling(cur, next *Config) (func() error, error) {
	ceiling := next.TBFConfig()
	switch q := n.qdisc.(type) {
	case *tbf.Discipline:
		if err := q.CheckChange(ceiling); err != nil {
			return nil, flagError(err, tbfFlags)
		}
		return func() error { return q.Change(ceiling) }, nil
	case *fifo.Discipline, *fqcodel.Discipline:
		if next.TBFLimit != 0 || next.TBFLatency != 0 {
			return nil, fmt.Errorf("--%s and --%s bound a tbf's own queue; the sandbox's qdisc is --%s=%v, whose queue keeps its bounds under a ceiling: leave them unset", FlagTBFLimit, FlagTBFLatency, FlagQDisc, cur.QDisc)
		}
		g, maxSize, err := tbf.NewGate(n.link, ceiling, true)
		if err != nil {
			return nil, flagError(err, tbfFlags)
		}
		return func() error {
			q.(interface{ SetCeiling(dispatch.Gate, uint32) }).SetCeiling(g, maxSize)
			return nil
		}, nil
	}
	return nil, fmt.Errorf("the sandbox has no qdisc (--%s=none): there is no queue to shape; start it with --%s=fifo (the default) or tbf", FlagQDisc, FlagQDisc)
}

// planIngress checks the ingress part of a change.
func (n *NIC) planIngress(cur, next *Config) (func() error, error) {
	if n.ingress != nil {
		if plan, err := planKind(IngressCeiling, cur, next, n.ingress.Whole()); plan != nil || err != nil {
			return plan, err
		}
	}
	if resets := next.resetsOf(FlagIngressHTB); cur.IngressHTB != next.IngressHTB || len(resets) > 0 {
		h := ingressHTB(n.ingress)
		if h == nil {
			return nil, fmt.Errorf("--%s: the sandbox's NIC has no htb classes on what it receives", FlagIngressHTB)
		}
		return planClasses(cur.IngressHTB, next.IngressHTB, h, resets)
	}
	if cur.IngressCake != next.IngressCake {
		c := ingressCake(n.ingress)
		if c == nil {
			return nil, fmt.Errorf("--%s: the sandbox's NIC has no cake on what it receives", FlagIngressCake)
		}
		cfg, err := next.IngressCakeConfig()
		if err != nil {
			return nil, err
		}
		return func() error { return c.Change(cfg) }, nil
	}
	if sameCeiling(IngressCeiling, cur, next) {
		return nil, nil
	}
	if n.ingress == nil {
		return nil, fmt.Errorf("the sandbox's NIC has no ingress shaper to change")
	}
	cfg := next.IngressConfig()
	if err := n.ingress.CheckChange(cfg); err != nil {
		return nil, flagError(err, ingressFlags)
	}
	return func() error { return n.ingress.Change(cfg) }, nil
}

// LiveArgs returns c's values of the flags `runsc qdisc change` may give,
// every one of them ("--qdisc-tbf-rate=1250000", "--qdisc-tbf-pkt-rate=0",
// ...), in the table's order: Changed(c.LiveArgs()) on any Config of the
// same qdisc gives c's ceilings. A checkpoint saves them.
func (c *Config) LiveArgs() []string {
	var args []string
	for i := range Flags {
		if f := &Flags[i]; f.live() {
			args = append(args, "--"+f.Name+"="+f.get(c))
		}
	}
	return args
}
