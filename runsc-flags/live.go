package runscflags

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
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
			words, err := next.changedWords(f, value)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", name, err)
			}
			knobs, err := f.alias.expand(next, words)
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
			words, err := next.changedWords(f, value)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", name, err)
			}
			if err := next.Set(name, words); err != nil {
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
	if check.QDisc.Is(tbf.Kind) && check.TBFRate == 0 && check.TBFPacketRate == 0 {
		// A tbf whose ceiling a change removed: valid on a running
		// sandbox (its queue stays), not as a sandbox's start.
		check.QDisc = QDiscOf(fifo.Kind)
	}
	if err := check.Validate(); err != nil {
		return nil, err
	}
	return next, nil
}

// changedWords returns the words a change gives f, the words flag of a
// kind (a registered kind's, or an alias of its knobs), as `tc qdisc
// change` reads them for the kind (Kind.Changed): read over the options
// in force where the kind keeps what a change does not name (fq_codel,
// as fq_codel_change), and written whole; as they are where a change's
// words are the kind's whole options (tbf, as tbf_change).
func (c *Config) changedWords(f *Flag, words string) (string, error) {
	k, d := f.words, f.wordsOf
	if f.alias != nil {
		kind, ok := qdisc.Lookup(f.alias.kind)
		if !ok {
			return words, nil
		}
		k, d = &kind, EgressCeiling
		if f.Name != kindFlagName(EgressCeiling, kind.Name) {
			d = IngressCeiling
		}
	}
	if k.Changed == nil {
		return words, nil
	}
	cur, _, err := c.optionsOf(d, k)
	if err != nil {
		return "", err
	}
	o, err := k.Changed(cur, words)
	if err != nil {
		return "", err
	}
	return o.String(), nil
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

// planEgress checks the egress part of a change: htb's classes change in
// place (htb_change_class); the options of the kind the NIC runs change
// in place by its Kind (planOptions: a tbf's ceiling, as tbf_change;
// fq_codel's knobs, as fq_codel_change; cake's words; a registered
// kind's words); fq_codel's knobs change the fq_codel grafted under a tbf
// (planFQCoDel); and a ceiling over any other kind is set on its queue,
// or lifted (planCeiling).
func (n *NIC) planEgress(cur, next *Config) (func() error, error) {
	if plan, ok, err := n.planHTB(EgressCeiling, cur, next); ok {
		return plan, err
	}
	child, err := n.planFQCoDel(cur, next)
	if err != nil {
		return nil, err
	}
	own, err := planOptions(EgressCeiling, cur, next, n.qdisc)
	if err != nil {
		return nil, err
	}
	var ceiling func() error
	if !sameCeiling(EgressCeiling, cur, next) && next.runs(EgressCeiling) != ceilingKind {
		if ceiling, err = n.planCeiling(cur, next); err != nil {
			return nil, err
		}
	}
	return inOrder(child, own, ceiling), nil
}

// inOrder returns the changes that are not nil as one, applied in order
// (nil for none).
func inOrder(changes ...func() error) func() error {
	var todo []func() error
	for _, c := range changes {
		if c != nil {
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	return func() error {
		for _, c := range todo {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}

// planOptions checks the change of the options of the kind the NIC runs
// in direction d, on q, the qdisc it built there: in place, by the kind's
// Change, which its CheckChange checks first. nil when the options do not
// change. A kind that cannot change in place, or whose place the change
// would give another kind, is refused naming what to do.
func planOptions(d Ceiling, cur, next *Config, q any) (func() error, error) {
	in, ok, err := next.kindOf(d)
	if !ok || err != nil {
		return nil, err
	}
	was, ok, err := cur.kindOf(d)
	if err != nil {
		return nil, err
	}
	switch {
	case ok && was.kind.Name == in.kind.Name && reflect.DeepEqual(was.opts, in.opts):
		return nil, nil
	case !ok || was.kind.Name != in.kind.Name:
		return nil, fmt.Errorf("the NIC runs %s there (%s); a change cannot put %s in its place: restart the sandbox with the flags", cur.runs(d), cur.kindName(d), in.kind.Name)
	case in.kind.Change == nil:
		return nil, fmt.Errorf("--%s: %s cannot change in place; restart the sandbox with the words", in.flag, in.kind.Name)
	}
	dq, ok := q.(qdisc.Discipline)
	if !ok {
		return nil, fmt.Errorf("--%s: the NIC does not run %s there", in.flag, in.kind.Name)
	}
	if in.kind.CheckChange != nil {
		if err := in.kind.CheckChange(dq, in.opts); err != nil {
			return nil, next.buildError(d, in, err)
		}
	}
	return func() error { return in.kind.Change(dq, in.opts) }, nil
}

// planCeiling checks the change of the egress ceiling over the queue of
// a kind that is not itself the ceiling's (a tbf changes its own options:
// planOptions): the kind takes the ceiling's buckets over its queue in
// place, or loses them (Kind.Ceiling: fifo, fq_codel). A kind without a
// Ceiling is refused naming it, and what to do.
func (n *NIC) planCeiling(cur, next *Config) (func() error, error) {
	takers := ceilingTakers()
	in, ok, err := cur.kindOf(EgressCeiling)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the sandbox has no qdisc (--%s=none): there is no queue to shape; start it with --%s=%s and the ceiling, or with --%s=%s, which take one in place", FlagQDisc, FlagQDisc, ceilingKind, FlagQDisc, orList(takers))
	}
	q, isQ := n.qdisc.(qdisc.Discipline)
	if in.kind.Ceiling == nil || !isQ {
		return nil, fmt.Errorf("--%s=%s cannot take a ceiling in place: %s does not put one over its queue; restart the sandbox with the ceiling (--%s=%s), or start it with --%s=%s, which take one in place", FlagQDisc, in.kind.Name, in.kind.Name, FlagQDisc, ceilingKind, FlagQDisc, orList(takers))
	}
	if next.TBFLimit != 0 || next.TBFLatency != 0 {
		return nil, fmt.Errorf("--%s and --%s bound a tbf's own queue; the sandbox's qdisc is --%s=%v, whose queue keeps its bounds under a ceiling: leave them unset", FlagTBFLimit, FlagTBFLatency, FlagQDisc, cur.QDisc)
	}
	g, maxSize, err := tbf.NewGate(n.link, next.TBFConfig(), true)
	if err != nil {
		return nil, flagError(err, EgressCeiling)
	}
	return func() error { return in.kind.Ceiling(q, g, maxSize) }, nil
}

// ceilingTakers are the registered kinds that take a ceiling over their
// queue in place (Kind.Ceiling).
func ceilingTakers() []string {
	var names []string
	for _, k := range qdisc.Kinds() {
		if k.Ceiling != nil {
			names = append(names, k.Name)
		}
	}
	return names
}

// planIngress checks the ingress part of a change: htb's classes change
// in place; a kind the receive path runs whole (ingress.NewWhole) changes
// its options in place by its Kind (planOptions); the receive path's own
// tbf (ingress.Endpoint) changes its ceiling.
func (n *NIC) planIngress(cur, next *Config) (func() error, error) {
	if plan, ok, err := n.planHTB(IngressCeiling, cur, next); ok {
		return plan, err
	}
	if n.ingress != nil && n.ingress.Whole() != nil {
		return planOptions(IngressCeiling, cur, next, n.ingress.Whole())
	}
	if cur.IngressCake != next.IngressCake {
		return nil, fmt.Errorf("--%s: the sandbox's NIC has no cake on what it receives", FlagIngressCake)
	}
	if sameCeiling(IngressCeiling, cur, next) {
		return nil, nil
	}
	if n.ingress == nil {
		return nil, fmt.Errorf("the sandbox's NIC has no ingress shaper to change")
	}
	cfg := next.IngressConfig()
	if err := n.ingress.CheckChange(cfg); err != nil {
		return nil, flagError(err, IngressCeiling)
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
