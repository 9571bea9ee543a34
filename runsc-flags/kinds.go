package runscflags

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// The flags of the registered kinds (qdisc.Register): each kind's words in
// each direction, --qdisc-KIND="words" and --qdisc-ingress-KIND="words"
// (an underscore in the kind's name is a dash in the flag's), made from
// the registry when asked for, so a kind registered by any package, a
// test's included, has them. The table's own flags of that name come
// first: htb's and cake's scripts, and the words of tbf's and fq_codel's
// knobs (aliases.go).

// wordsRef is the field of a kind's words flag: Config.Words[name].
type wordsRef struct {
	c    *Config
	name string
}

// get returns the words held, "" for none.
func (r wordsRef) get() string { return r.c.Words[r.name] }

// set holds w ("" removes it). The map is copied first: Configs copied
// by value share it, and each must keep its own.
func (r wordsRef) set(w string) {
	m := maps.Clone(r.c.Words)
	if w == "" {
		delete(m, r.name)
	} else {
		if m == nil {
			m = map[string]string{}
		}
		m[r.name] = w
	}
	if len(m) == 0 {
		m = nil
	}
	r.c.Words = m
}

// kindFlagName is the name of kind's words flag in direction d.
func kindFlagName(d Ceiling, kind string) string {
	slug := strings.ReplaceAll(kind, "_", "-")
	if d == IngressCeiling {
		return "qdisc-ingress-" + slug
	}
	return "qdisc-" + slug
}

// kindFlags returns the words flags of the registered kinds that the
// table does not have, by kind and then direction (egress first).
func kindFlags() []Flag {
	var fs []Flag
	for _, k := range qdisc.Kinds() {
		for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
			if f := newKindFlag(k, d); f != nil {
				fs = append(fs, *f)
			}
		}
	}
	return fs
}

// newKindFlag returns the words flag of kind k in direction d, nil where
// the table has a flag of that name (tbf's, fq_codel's on the send path,
// htb's and cake's: their Flag.options give the kind's options).
func newKindFlag(k qdisc.Kind, d Ceiling) *Flag {
	name := kindFlagName(d, k.Name)
	if byName[name] != nil {
		return nil
	}
	where, selector := "what the sandbox sends, with --qdisc="+k.Name, FlagQDisc
	if d == IngressCeiling {
		where, selector = "what the sandbox receives, with --qdisc-ingress="+k.Name, FlagIngressQDisc
	}
	rule := Rule{Permit: Tighten, Note: "by " + k.Name + "'s own rule (its Kind.Tighten), and only where the operator runs " + k.Name}
	if k.Tighten == nil {
		rule = operatorOnly
	}
	kind := k
	unset, usage := k.Name+"'s defaults", "\"\" for its defaults"
	if _, err := k.Parse(""); err != nil { // a kind with no defaults (mmlink's trace)
		unset, usage = fmt.Sprintf("unset; required with `--%s=%s`", selector, k.Name), "required"
	}
	return &Flag{
		Name:       name,
		Kind:       KindWords,
		Unset:      unset,
		Example:    k.Example,
		Usage:      fmt.Sprintf("%s On %s (--%s), in tc's words (%q); %s.", k.Usage, where, selector, k.Example, usage),
		Annotation: rule,
		Linux:      Linux{Qdisc: k.Name},
		words:      &kind,
		wordsOf:    d,
		field:      func(c *Config) any { return wordsRef{c, name} },
	}
}

// AllFlags returns the table's flags, the aliases of its kinds' knobs,
// then the registered kinds' words flags: every flag RegisterQDiscFlags
// registers and Args may give.
func AllFlags() []Flag { return slices.Concat(Flags, aliasFlags, kindFlags()) }

// parseWords reads w as kind's words and returns them as the kind writes
// them back ("" stays "": the kind's defaults).
func parseWords(kind *qdisc.Kind, w string) (string, error) {
	if strings.TrimSpace(w) == "" {
		return "", nil
	}
	o, err := kind.Parse(w)
	if err != nil {
		return "", err
	}
	return o.String(), nil
}

// kindIn is the kind a direction runs, with its options, as the Config
// says: every kind is a registered one, reached through its Kind.
type kindIn struct {
	kind *qdisc.Kind
	opts qdisc.Options
	flag string // its words flag, --qdisc-KIND or --qdisc-ingress-KIND
	// words: its options are its words flag's words, held in
	// Config.Words (a kind the table has no flags of its own for);
	// otherwise the table's flags give them (Flag.options: tbf's knobs,
	// fq_codel's, htb's script, cake's words).
	words bool
}

// runs is the name of the kind c runs in direction d: --qdisc, or the
// receive path's (ingressName); "none" for none.
func (c *Config) runs(d Ceiling) string {
	if d == EgressCeiling {
		return c.QDisc.String()
	}
	return c.ingressName()
}

// kindOf returns the kind c runs in direction d, with its options: those
// its words flag holds, or those the table's flags of the kind give
// (optionsOf). ok is false where the direction runs none, or a name no
// kind is registered as (Validate refuses that). An error names the flag
// to change.
func (c *Config) kindOf(d Ceiling) (kindIn, bool, error) {
	k, ok := qdisc.Lookup(c.runs(d))
	if !ok {
		return kindIn{}, false, nil
	}
	in := kindIn{kind: &k, flag: kindFlagName(d, k.Name)}
	var err error
	if in.opts, in.words, err = c.optionsOf(d, &k); err != nil {
		return kindIn{}, false, err
	}
	return in, true, nil
}

// wordsIn returns the kind whose words f, a kind's words flag, holds,
// where c puts that kind in force: the kind c runs in f's direction, or
// on the send path the tbf's child (--qdisc-tbf-child=netem takes
// --qdisc-netem's words, as `tc qdisc add dev D parent 1:1 netem delay
// 50ms` under a tbf). ok is false where neither is f's kind.
func (c *Config) wordsIn(f *Flag) (kindIn, bool, error) {
	if c.runs(f.wordsOf) == f.words.Name {
		return c.kindOf(f.wordsOf)
	}
	if f.wordsOf != EgressCeiling || !c.grafts(f.words.Name) {
		return kindIn{}, false, nil
	}
	o, err := f.words.Parse(c.Words[f.Name])
	if err != nil {
		return kindIn{}, false, fmt.Errorf("--%s: %w", f.Name, err)
	}
	return kindIn{kind: f.words, opts: o, flag: f.Name, words: true}, true, nil
}

// optionsOf returns kind k's options in direction d as c's flags give
// them: where the table has a flag of k's words there (Flag.options),
// what that flag and the flags of k's knobs say; otherwise the words of
// k's words flag (words true), "" for k's defaults.
func (c *Config) optionsOf(d Ceiling, k *qdisc.Kind) (o qdisc.Options, words bool, err error) {
	flag := kindFlagName(d, k.Name)
	if f := byName[flag]; f != nil && f.options != nil {
		o, err = f.options(c)
		return o, false, err
	}
	if o, err = k.Parse(c.Words[flag]); err != nil {
		return nil, true, fmt.Errorf("--%s: %w", flag, err)
	}
	return o, true, nil
}

// validateKinds is Validate for the registered kinds: each direction's
// kind is registered, its words parse, and no kind's words are given for
// a kind not in force.
func (c *Config) validateKinds() error {
	if c.IngressQDisc != "" {
		if _, ok := qdisc.Lookup(c.IngressQDisc); !ok && c.IngressQDisc != "none" {
			return fmt.Errorf("--%s=%s: no such qdisc; choose %s", FlagIngressQDisc, c.IngressQDisc, strings.Join(append([]string{"none"}, qdisc.KindNames()...), ", "))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Words)) {
		f := lookup(name)
		if f == nil || f.words == nil {
			return fmt.Errorf("--%s: no such qdisc flag", name)
		}
		_, ok, err := c.wordsIn(f)
		if err != nil {
			return err
		}
		if !ok {
			sel := FlagQDisc
			if f.wordsOf == IngressCeiling {
				sel = FlagIngressQDisc
			}
			give := fmt.Sprintf("--%s=%s", sel, f.words.Name)
			if f.wordsOf == EgressCeiling && f.words.Queue != nil {
				give += fmt.Sprintf(" (or --%s=%s under --%s=%s)", FlagTBFChild, f.words.Name, FlagQDisc, ceilingKind)
			}
			return fmt.Errorf("--%s is %s's words, but --%s is %s: give %s or leave --%s unset", name, f.words.Name, sel, c.runs(f.wordsOf), give, name)
		}
	}
	return c.validateIngressQDisc()
}

// validateIngressQDisc checks that --qdisc-ingress, where given, names
// what the receive path's other flags shape it with.
func (c *Config) validateIngressQDisc() error {
	sel := c.IngressQDisc
	if sel == "" {
		return nil
	}
	for _, x := range []struct {
		kind, flag string
		set        bool
	}{
		{"tbf", FlagIngressRate, c.IngressShaped()},
		{"htb", FlagIngressHTB, c.IngressHTB != ""},
		{"cake", FlagIngressCake, c.IngressCake != ""},
	} {
		switch {
		case x.set && sel != x.kind:
			return fmt.Errorf("--%s=%s, but --%s shapes the receive path with %s: give one of them", FlagIngressQDisc, sel, x.flag, x.kind)
		case !x.set && sel == x.kind:
			return fmt.Errorf("--%s=%s needs --%s", FlagIngressQDisc, sel, x.flag)
		}
	}
	return nil
}

// ingressName is the kind that shapes the receive path: --qdisc-ingress,
// or the one its flags imply ("none" for none).
func (c *Config) ingressName() string {
	switch {
	case c.IngressQDisc != "":
		return c.IngressQDisc
	case c.IngressHTB != "":
		return "htb"
	case c.IngressCake != "":
		return "cake"
	case c.IngressShaped():
		return "tbf"
	}
	return "none"
}
