package runscflags

import (
	"fmt"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// What the kinds whose options are their words flag's (kinds.go) get
// beyond flags and building: annotations under the kind's Tighten and
// Kubernetes' bandwidth under its Fit (the table's kinds have rules of
// their own), a checkpoint's words. Every kind, the table's too, is
// changed by its Change (live.go's planOptions), and keeps a
// checkpoint's state by its Save and Restore and its metrics by its
// Samples (kindAt).

// tightenKind applies the annotation of a kind's words flag f: the pod's
// words held to the operator's by the kind's Tighten, where the operator
// runs that kind in that direction or grafts it as the tbf's child
// (wordsIn); with --allow-flag-override, the words as given.
func (f *Flag) tightenKind(op, next *Config, value string) error {
	if op.AllowFlagOverride {
		return f.set(next, value)
	}
	in, ok, err := op.wordsIn(f)
	if err != nil {
		return err
	}
	if !ok {
		if in, err = f.podChosen(op, next); err != nil {
			return err
		}
	}
	parse := in.kind.Parse
	if in.kind.ParsePod != nil { // a pod's words read no file on the host
		parse = in.kind.ParsePod
	}
	pod, err := parse(value)
	if err != nil {
		return err
	}
	merged, err := in.kind.Tighten(in.opts, pod)
	if err != nil {
		return fmt.Errorf("%w (the operator's: --%s=%q)", err, in.flag, in.opts.String())
	}
	wordsRef{next, in.flag}.set(merged.String())
	return nil
}

// podChosen is the kind of f's words where the pod's own annotation put
// it in place of the operator's qdisc (--qdisc=netem over fifo or none:
// a chaos experiment its author runs), with the kind's defaults as the
// operator's options: the pod's words may only make an untouched
// network worse. Where the pod did not choose it, the error says so.
func (f *Flag) podChosen(op, next *Config) (kindIn, error) {
	in, ok, err := next.kindOf(f.wordsOf)
	if err != nil {
		return kindIn{}, err
	}
	if !ok || in.kind.Name != f.words.Name {
		return kindIn{}, fmt.Errorf("the operator does not run %s there (%s), and a pod cannot put it in place of the operator's qdisc; that %s", f.words.Name, op.kindName(f.wordsOf), requiresOverride)
	}
	if in.opts, err = in.kind.Parse(""); err != nil {
		return kindIn{}, err
	}
	return in, nil
}

// kindName says which qdisc c runs in direction d.
func (c *Config) kindName(d Ceiling) string {
	if d == IngressCeiling {
		return "--" + FlagIngressQDisc + "=" + c.ingressName()
	}
	return "--" + FlagQDisc + "=" + c.QDisc.String()
}

// applyKubeKind applies a Kubernetes bandwidth of r bytes/s in direction
// d where a kind whose options are its words flag's shapes it (the
// table's kinds have rules of their own: applyKube): by the kind's Fit,
// and reports true. A kind with no Fit (no ceiling of its own), or that cannot hold
// r, gives way to the tbf that takes every other qdisc's place
// (applyKube), and it reports false.
func (c *Config) applyKubeKind(d Ceiling, r uint64) bool {
	in, ok, err := c.kindOf(d)
	if !ok || err != nil || !in.words {
		return false
	}
	if in.kind.Fit != nil {
		if o, err := in.kind.Fit(in.opts, r); err == nil {
			wordsRef{c, in.flag}.set(o.String())
			return true
		}
	}
	wordsRef{c, in.flag}.set("")
	if d == IngressCeiling {
		c.IngressQDisc = ""
	}
	return false
}

// kindArgs are the change arguments that give the words of c's kinds
// whose options are their words flags' to a NIC built from the same
// flags, for a checkpoint (the table's flags give the others': LiveArgs,
// htbArgs, cakeArgs, fqCoDelArgs).
func (c *Config) kindArgs() []string {
	var args []string
	for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
		if in, ok, err := c.kindOf(d); ok && err == nil && in.words && in.kind.Change != nil {
			args = append(args, "--"+in.flag+"="+c.Words[in.flag])
		}
	}
	return args
}

// kindAt returns the registered kind the NIC runs in direction d (KindOf),
// and the qdisc it built there: the send path's qdisc, or the receive
// path's own (an ingress tbf has none: the Endpoint is its own shaper).
func (n *NIC) kindAt(d Ceiling) (*qdisc.Kind, qdisc.Discipline, bool) {
	cfg := n.Config()
	k, _, ok := cfg.KindOf(d)
	if !ok {
		return nil, nil, false
	}
	var q any = n.qdisc
	if d == IngressCeiling {
		if n.ingress == nil || n.ingress.Whole() == nil {
			return nil, nil, false
		}
		q = n.ingress.Whole()
	}
	dq, ok := q.(qdisc.Discipline)
	return &k, dq, ok
}

// saveKinds returns what the kinds' Save keep of each direction's qdisc
// (htb's: its quotas' counters).
func (n *NIC) saveKinds() (egress, ingress []byte) {
	save := func(d Ceiling) []byte {
		if k, q, ok := n.kindAt(d); ok && k.Save != nil {
			return k.Save(q)
		}
		return nil
	}
	return save(EgressCeiling), save(IngressCeiling)
}

// restoreKinds gives the kinds' saved states back to the NIC's qdiscs.
func (n *NIC) restoreKinds(egress, ingress []byte) error {
	for _, x := range []struct {
		d     Ceiling
		state []byte
	}{{EgressCeiling, egress}, {IngressCeiling, ingress}} {
		if len(x.state) == 0 {
			continue
		}
		k, q, ok := n.kindAt(x.d)
		if !ok || k.Restore == nil {
			return fmt.Errorf("the checkpoint has a qdisc's state for a NIC whose qdisc keeps none")
		}
		if err := k.Restore(q, x.state); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	return nil
}

// Samples returns the metrics of the registered kind the NIC runs in
// each direction (Kind.Metrics), by kind: nil where the kind has none.
func (n *NIC) Samples() (egress, ingress KindSamples) {
	read := func(d Ceiling) KindSamples {
		k, q, ok := n.kindAt(d)
		if !ok || k.Samples == nil {
			return KindSamples{}
		}
		return KindSamples{Kind: k.Name, Samples: k.Samples(q)}
	}
	return read(EgressCeiling), read(IngressCeiling)
}

// KindSamples are a kind's metrics read from one qdisc.
type KindSamples struct {
	Kind    string
	Samples []qdisc.Sample
}
