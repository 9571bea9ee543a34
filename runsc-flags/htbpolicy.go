package runscflags

import (
	"fmt"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
)

// validateHTB is Validate for the htb flags: --qdisc=htb needs its
// script, a script needs its qdisc, and the receive direction takes a
// tbf or classes, not both.
func (c *Config) validateHTB() error {
	switch {
	case c.QDisc.Is(htb.Kind) && c.HTB == "":
		return fmt.Errorf("--%s=htb requires --%s, its classes (such as %q)", FlagQDisc, FlagHTB, "class root classid 1:1 rate 10mbit")
	case !c.QDisc.Is(htb.Kind) && c.HTB != "":
		return fmt.Errorf("--%s gives htb's classes and needs --%s=htb", FlagHTB, FlagQDisc)
	case c.IngressHTB != "" && (c.IngressRate != 0 || c.IngressPacketRate != 0):
		return fmt.Errorf("--%s and --%s both shape what the sandbox receives; give one of them", FlagIngressHTB, FlagIngressRate)
	}
	for _, f := range []struct{ name, text string }{{FlagHTB, c.HTB}, {FlagIngressHTB, c.IngressHTB}} {
		if f.text == "" {
			continue
		}
		if _, err := htb.ParseScript(f.text); err != nil {
			return fmt.Errorf("--%s: %w", f.name, err)
		}
	}
	return nil
}

// HTBConfig returns the htb.Config --qdisc-htb describes (send path),
// its leaves' fq_codel, if any, made for packets of up to mtu bytes (0:
// made by NewQueueingDiscipline, which knows the link's).
func (c *Config) HTBConfig() (htb.Config, error) {
	return c.htbConfig(FlagHTB, c.HTB, classify.Egress, 0)
}

// IngressHTBConfig returns the htb.Config --qdisc-ingress-htb describes
// (receive path: rules match the sender).
func (c *Config) IngressHTBConfig() (htb.Config, error) {
	return c.htbConfig(FlagIngressHTB, c.IngressHTB, classify.Ingress, 0)
}

// htbConfig returns the htb.Config of the script text of flag for packets
// travelling in direction dir; with mtu not 0, the leaves it grafts
// fq_codel on get one each, made with the --qdisc-fq-codel-* knobs.
func (c *Config) htbConfig(flag, text string, dir classify.Direction, mtu uint32) (htb.Config, error) {
	s, err := htb.ParseScript(text)
	if err != nil {
		return htb.Config{}, fmt.Errorf("--%s: %w", flag, err)
	}
	cfg, err := s.Config(dir, c.FQCoDelConfig(), mtu)
	if err != nil {
		return htb.Config{}, flagError(err, EgressCeiling)
	}
	return cfg, nil
}

// tighten applies an annotation's update of an htb script (class and
// filter statements, see classUpdate) to next, over the operator's script
// in op, and refuses it unless it shapes every packet at least as tightly
// as the operator's: htb.Script.Tighten's rule, which also fills in the
// shares of the classes it splits. With --allow-flag-override it need not
// tighten.
func (f *Flag) tighten(op, next *Config, value string) error {
	base := *f.field(op).(*string)
	if base == "" {
		return fmt.Errorf("--%s is not set by the operator: there are no classes to tighten; setting it %s", f.Name, requiresOverride)
	}
	opScript, err := htb.ParseScript(base)
	if err != nil {
		return fmt.Errorf("the operator's --%s: %w", f.Name, err)
	}
	sc, _, err := parseUpdate(opScript, value, updateRules{add: true, filters: true})
	if err != nil {
		return err
	}
	if !op.AllowFlagOverride {
		if sc, err = opScript.Tighten(sc); err != nil {
			return fmt.Errorf("%w; loosening --%s %s", err, f.Name, requiresOverride)
		}
	}
	*f.field(next).(*string) = sc.String()
	return nil
}

// changeClasses applies `runsc qdisc change --qdisc-htb=...` to c: the
// operator's class statements change classes in place (any setting, up
// or down, and quotas raised or removed; new classes cannot be added to a
// running tree), and "reset classid X" statements renew quotas. The
// resets are kept for planClasses in c's script as it is: a reset
// changes no setting.
func (c *Config) changeClasses(f *Flag, value string) error {
	p := f.field(c).(*string)
	if *p == "" {
		return fmt.Errorf("the sandbox has no htb classes here to change")
	}
	cur, err := htb.ParseScript(*p)
	if err != nil {
		return err
	}
	next, u, err := parseUpdate(cur, value, updateRules{resets: true})
	if err != nil {
		return err
	}
	*p = next.String()
	c.resets = append(c.resets, resetsOf(f, u.resets)...)
	return nil
}

// A quota reset a change asks for: the direction's flag and the class.
type quotaReset struct {
	flag  string
	class uint32
}

// resetsOf returns the classes whose quota reset c asks for on the
// direction of flag.
func (c *Config) resetsOf(flag string) []uint32 {
	var ids []uint32
	for _, r := range c.resets {
		if r.flag == flag {
			ids = append(ids, r.class)
		}
	}
	return ids
}

// resetsOf pairs f with each class of ids.
func resetsOf(f *Flag, ids []uint32) []quotaReset {
	out := make([]quotaReset, len(ids))
	for i, id := range ids {
		out[i] = quotaReset{f.Name, id}
	}
	return out
}

// planHTB checks a change of htb's classes in direction d, as
// planClasses: handled is false where neither its script changes nor a
// quota is reset, and the change is someone else's to plan.
func (n *NIC) planHTB(d Ceiling, cur, next *Config) (plan func() error, handled bool, err error) {
	flag, was, now := FlagHTB, cur.HTB, next.HTB
	if d == IngressCeiling {
		flag, was, now = FlagIngressHTB, cur.IngressHTB, next.IngressHTB
	}
	resets := next.resetsOf(flag)
	if was == now && len(resets) == 0 {
		return nil, false, nil
	}
	h, ok := n.qdisc.(*htb.Discipline)
	if d == IngressCeiling {
		h = ingressHTB(n.ingress)
	}
	switch {
	case d == EgressCeiling && !ok:
		return nil, true, fmt.Errorf("--%s: the sandbox's qdisc is not htb (--%s=%v)", flag, FlagQDisc, cur.QDisc)
	case h == nil:
		return nil, true, fmt.Errorf("--%s: the sandbox's NIC has no htb classes on what it receives", flag)
	}
	plan, err = planClasses(was, now, h, resets)
	return plan, true, err
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

// planClasses checks the change of a running htb's classes from the
// script cur to next and returns it, to apply: each class whose settings
// differ is changed in place (htb.Discipline.ChangeClass, whose checks
// were made on the whole tree).
func planClasses(cur, next string, q *htb.Discipline, resets []uint32) (func() error, error) {
	a, err := htb.ParseScript(cur)
	if err != nil {
		return nil, err
	}
	b, err := htb.ParseScript(next)
	if err != nil {
		return nil, err
	}
	var changed []htb.ClassConfig
	for _, c := range b.Classes {
		j := classIndex(a.Classes, c.ID)
		if j < 0 {
			return nil, fmt.Errorf("class %s is not in the running tree; classes are not added to a running sandbox", classify.ClassID(c.ID))
		}
		if a.Classes[j].String() != c.String() {
			changed = append(changed, c)
		}
	}
	return func() error {
		for _, c := range changed {
			if err := q.ChangeClass(c); err != nil {
				return err
			}
		}
		for _, id := range resets {
			if err := q.ResetQuota(id); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
