package qdisc

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Typed is a Kind written with the kind's own Options O and Discipline D:
// its package gives functions on its own types and Kind does the
// conversions, so no kind asserts types itself. A value of another
// kind's type (a runtime's mistake) gets an error that names both, not a
// panic. The fields mean what Kind's of the same names do.
type Typed[O Options, D Discipline] struct {
	Name, Usage, Example string

	Parse func(words string) (O, error)
	// ParsePod: see Kind.ParsePod.
	ParsePod func(words string) (O, error)
	New      func(lower stack.LinkEndpoint, clock tcpip.Clock, o O) (D, error)
	NewTo    func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, o O) (D, error)
	Change   func(q D, o O) error
	Tighten  func(operator, pod O) (O, error)
	Fit      func(o O, bandwidth uint64) (O, error)

	Metrics []Metric
	Members func(o O) []string
	Samples func(q D) []Sample

	Save    func(q D) []byte
	Restore func(q D, state []byte) error

	CheckChange func(q D, o O) error
	Changed     func(cur O, words string) (O, error)
	Queue       func(o O, mtu uint32) (Queue, error)
	Graft       func(o O, mtu uint32, child func(kind string) (Child, error)) (O, error)
	Ceiling     func(q D, gate Gate, maxSize uint32) error
}

// Kind returns t as the Kind Register takes. A function t leaves nil is
// nil in it.
func (t Typed[O, D]) Kind() Kind {
	k := Kind{Name: t.Name, Usage: t.Usage, Example: t.Example, Metrics: t.Metrics}
	if t.Parse != nil {
		k.Parse = func(words string) (Options, error) { return asOptions(t.Parse(words)) }
	}
	if t.ParsePod != nil {
		k.ParsePod = func(words string) (Options, error) { return asOptions(t.ParsePod(words)) }
	}
	if t.New != nil {
		k.New = func(lower stack.LinkEndpoint, clock tcpip.Clock, o Options) (Discipline, error) {
			to, err := t.options(o)
			if err != nil {
				return nil, err
			}
			return AsDiscipline(t.New(lower, clock, to))
		}
	}
	if t.NewTo != nil {
		k.NewTo = func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, o Options) (Discipline, error) {
			to, err := t.options(o)
			if err != nil {
				return nil, err
			}
			return AsDiscipline(t.NewTo(out, link, clock, to))
		}
	}
	if t.Change != nil {
		k.Change = func(q Discipline, o Options) error {
			tq, err := t.discipline(q)
			if err != nil {
				return err
			}
			to, err := t.options(o)
			if err != nil {
				return err
			}
			return t.Change(tq, to)
		}
	}
	if t.Tighten != nil {
		k.Tighten = func(operator, pod Options) (Options, error) {
			op, err := t.options(operator)
			if err != nil {
				return nil, err
			}
			p, err := t.options(pod)
			if err != nil {
				return nil, err
			}
			return asOptions(t.Tighten(op, p))
		}
	}
	if t.Fit != nil {
		k.Fit = func(o Options, bandwidth uint64) (Options, error) {
			to, err := t.options(o)
			if err != nil {
				return nil, err
			}
			return asOptions(t.Fit(to, bandwidth))
		}
	}
	t.addMembers(&k)
	t.addState(&k)
	t.addChanges(&k)
	t.addGrafts(&k)
	return k
}

// addChanges sets k's CheckChange and Changed from t's.
func (t Typed[O, D]) addChanges(k *Kind) {
	if t.CheckChange != nil {
		k.CheckChange = func(q Discipline, o Options) error {
			tq, err := t.discipline(q)
			if err != nil {
				return err
			}
			to, err := t.options(o)
			if err != nil {
				return err
			}
			return t.CheckChange(tq, to)
		}
	}
	if t.Changed != nil {
		k.Changed = func(cur Options, words string) (Options, error) {
			to, err := t.options(cur)
			if err != nil {
				return nil, err
			}
			return asOptions(t.Changed(to, words))
		}
	}
}

// addGrafts sets k's Queue, Graft and Ceiling from t's.
func (t Typed[O, D]) addGrafts(k *Kind) {
	if t.Queue != nil {
		k.Queue = func(o Options, mtu uint32) (Queue, error) {
			to, err := t.options(o)
			if err != nil {
				return nil, err
			}
			return t.Queue(to, mtu)
		}
	}
	if t.Graft != nil {
		k.Graft = func(o Options, mtu uint32, child func(string) (Child, error)) (Options, error) {
			to, err := t.options(o)
			if err != nil {
				return nil, err
			}
			return asOptions(t.Graft(to, mtu, child))
		}
	}
	if t.Ceiling != nil {
		k.Ceiling = func(q Discipline, gate Gate, maxSize uint32) error {
			tq, err := t.discipline(q)
			if err != nil {
				return err
			}
			return t.Ceiling(tq, gate, maxSize)
		}
	}
}

// addMembers sets k's Members and Samples from t's. Members of options of
// another kind are none, as are Samples of another kind's discipline.
func (t Typed[O, D]) addMembers(k *Kind) {
	if t.Members != nil {
		k.Members = func(o Options) []string {
			if to, ok := o.(O); ok {
				return t.Members(to)
			}
			return nil
		}
	}
	if t.Samples != nil {
		k.Samples = func(q Discipline) []Sample {
			if tq, ok := q.(D); ok {
				return t.Samples(tq)
			}
			return nil
		}
	}
}

// addState sets k's Save and Restore from t's.
func (t Typed[O, D]) addState(k *Kind) {
	if t.Save != nil {
		k.Save = func(q Discipline) []byte {
			if tq, ok := q.(D); ok {
				return t.Save(tq)
			}
			return nil
		}
	}
	if t.Restore != nil {
		k.Restore = func(q Discipline, state []byte) error {
			tq, err := t.discipline(q)
			if err != nil {
				return err
			}
			return t.Restore(tq, state)
		}
	}
}

// options returns o as t's Options, or an error naming both kinds' types.
func (t Typed[O, D]) options(o Options) (O, error) {
	to, ok := o.(O)
	if !ok {
		var want O
		return want, fmt.Errorf("%s: options %T are not %s's (%T)", t.Name, o, t.Name, want)
	}
	return to, nil
}

// discipline returns q as t's Discipline, or an error naming both types.
func (t Typed[O, D]) discipline(q Discipline) (D, error) {
	tq, ok := q.(D)
	if !ok {
		var want D
		return want, fmt.Errorf("%s: qdisc %T is not a %s (%T)", t.Name, q, t.Name, want)
	}
	return tq, nil
}

// asOptions returns what a typed function returned as Options: nil, not
// a zero O, with an error.
func asOptions[O Options](o O, err error) (Options, error) {
	if err != nil {
		return nil, err
	}
	return o, nil
}
