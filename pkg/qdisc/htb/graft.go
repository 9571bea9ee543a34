package htb

// This file holds the qdiscs a script grafts on its leaves ("qdisc parent
// 1:20 fq_codel", "qdisc parent 1:20 netem delay 100ms"), as `tc qdisc
// add dev eth0 parent 1:20 KIND ...` grafts one in place of a leaf's
// pfifo: how a statement is read, checked and built.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// Graft is a leaf's qdisc that a script names with its own words: any
// registered kind that can be a child under a shaper (qdisc.Kind.Queue)
// other than fq_codel, whose knobs a runtime gives (Script.FQCoDel), and
// fifo, which is the leaf's default pfifo (runsc's: netem and fq):
// "qdisc parent 1:20 netem delay 100ms" delays the packets of class 1:20
// (a WAN's delay for the internet class, none for the cluster's).
type Graft struct {
	// Parent is the leaf class.
	Parent uint32
	// Kind is the grafted kind and Options its words, as its Parse (or,
	// for a pod's words, its ParsePod) read them.
	Kind    *qdisc.Kind
	Options qdisc.Options
}

// String writes g as its statement's words after "qdisc ": "parent 1:20
// netem delay 100ms".
func (g Graft) String() string {
	s := "parent " + classify.ClassID(g.Parent) + " " + g.Kind.Name
	if w := g.Options.String(); w != "" {
		s += " " + w
	}
	return s
}

// graftUsage is what a leaf's qdisc statement takes.
const graftUsage = "a leaf's qdisc is: qdisc parent 1:20 fq_codel, or qdisc parent 1:20 KIND WORDS with a kind that can be grafted (netem delay 100ms)"

// parseGraft reads the words of a leaf qdisc's statement: "parent 1:20
// fq_codel" (g nil) or "parent 1:20 KIND WORDS..." (g the graft), the
// kind's words read by its ParsePod where pod is set and the kind has one
// (a pod's words must not make the runtime open the host's files).
func parseGraft(text string, pod bool) (id uint32, g *Graft, err error) {
	w := strings.Fields(text)
	if len(w) < 3 || w[0] != "parent" {
		return 0, nil, errors.New(graftUsage)
	}
	r, err := classify.ParseRule("classid " + w[1])
	if err != nil {
		return 0, nil, err
	}
	name, words := w[2], strings.Join(w[3:], " ")
	if name == fqcodel.Kind.Name {
		if words != "" {
			return 0, nil, fmt.Errorf("%q: fq_codel's knobs on a leaf are the --qdisc-fq-codel-* flags, not words: say qdisc parent %s fq_codel", words, w[1])
		}
		return r.Class, nil, nil
	}
	k, ok := qdisc.Lookup(name)
	if !ok || k.Queue == nil || name == "fifo" {
		return 0, nil, fmt.Errorf("%q: a leaf takes fq_codel (its knobs are the --qdisc-fq-codel-* flags), %s with its words, or, left out, its pfifo", name, orKinds(graftable()))
	}
	parse := k.Parse
	if pod && k.ParsePod != nil {
		parse = k.ParsePod
	}
	o, err := parse(words)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", name, err)
	}
	return r.Class, &Graft{Parent: r.Class, Kind: &k, Options: o}, nil
}

// graftable returns the kinds a Graft takes: those registered that can
// be a child, but fq_codel and fifo.
func graftable() []string {
	var names []string
	for _, k := range qdisc.Kinds() {
		if k.Queue != nil && k.Name != fqcodel.Kind.Name && k.Name != "fifo" {
			names = append(names, k.Name)
		}
	}
	return names
}

// orKinds joins names as "a, b or c" ("another kind" for none).
func orKinds(names []string) string {
	switch len(names) {
	case 0:
		return "another kind"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// grafts returns the leaves s grafts a qdisc on, fq_codel's and the
// Grafts', each once with its statement's words for errors.
func (s Script) grafts() (ids []uint32, words []string) {
	for _, id := range s.FQCoDel {
		ids = append(ids, id)
		words = append(words, "parent "+classify.ClassID(id)+" fq_codel")
	}
	for _, g := range s.Grafts {
		ids = append(ids, g.Parent)
		words = append(words, g.String())
	}
	return ids, words
}

// checkGrafts refuses a qdisc grafted on a class that is missing or has
// children, or twice on one class.
func (s Script) checkGrafts() error {
	parents := map[uint32]bool{}
	for _, c := range s.Classes {
		parents[c.Parent] = true
	}
	seen := map[uint32]bool{}
	ids, words := s.grafts()
	for i, id := range ids {
		switch {
		case classIndex(s.Classes, id) < 0:
			return fmt.Errorf("qdisc %s: no class %s", words[i], classify.ClassID(id))
		case parents[id]:
			return fmt.Errorf("qdisc %s: class %s has children; only a leaf takes a qdisc", words[i], classify.ClassID(id))
		case seen[id]:
			return fmt.Errorf("qdisc %s: class %s is given a qdisc twice", words[i], classify.ClassID(id))
		}
		seen[id] = true
	}
	return nil
}

// graftLeaves gives each leaf cfg's script grafts a kind on with its words
// (Grafts) the queue of that kind, built for a link whose largest frame
// is mtu.
func (s Script) graftLeaves(cfg *Config, mtu uint32) error {
	for _, g := range s.Grafts {
		q, err := qdisc.Child{Kind: g.Kind, Options: g.Options}.NewQueue(mtu)
		if err != nil {
			return fmt.Errorf("qdisc %s: %w", g, err)
		}
		cfg.Classes[classIndex(cfg.Classes, g.Parent)].Leaf = q
	}
	return nil
}

// graftWords returns the statements of s's Grafts, as String writes them:
// what a running tree keeps (Discipline.grafts).
func (s Script) graftWords() string {
	var w []string
	for _, g := range s.Grafts {
		w = append(w, "qdisc "+g.String())
	}
	return strings.Join(w, "; ")
}

// keepGrafts records, on d that New or NewTo built from s, the words of
// s's Grafts, which a change of d's classes must keep.
func (s Script) keepGrafts(d *Discipline, err error) (*Discipline, error) {
	if err != nil {
		return nil, err
	}
	d.grafts = s.graftWords()
	return d, nil
}
