package htb

// This file holds an htb qdisc in tc's words, whole: Script, ParseScript
// and Script.String, and the Config it builds.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// Script is an htb qdisc with its classes, filters and leaves' qdiscs, in
// tc's words: one statement after another, separated by ";" or newlines,
// as `tc -batch` takes them without the command and device (runsc's
// --qdisc-htb and --qdisc-ingress-htb, the htb Kind's words):
//
//	qdisc default 20; class root classid 1:1 rate 1gbit;
//	class parent 1:1 classid 1:10 rate 900mbit;
//	class parent 1:10 classid 1:11 rate 100mbit;
//	class parent 1:1 classid 1:20 rate 10mbit quota 50gb per 24h;
//	filter dst 10.0.0.0/8 classid 1:10;
//	filter parent 1:10 dst 10.1.0.0/16 classid 1:11
//
// A "qdisc" statement (at most one, first) takes ParseQdisc's words, a
// "class" statement ParseClass's, a "filter" statement ParseFilter's
// (classify.ParseRule's, and "parent 1:10" for a filter of that class's
// chain rather than the qdisc's root chain; with no match words, "filter
// parent 1:10 classid 1:11" takes every packet, as tc's matchall);
// "qdisc parent 1:20 fq_codel" grafts fq_codel on a leaf class in place
// of its pfifo, as `tc qdisc add dev eth0 parent 1:20 fq_codel` does (its
// knobs are not among the words: Config takes them), and "qdisc parent
// 1:20 netem delay 100ms" grafts another kind that can be a child (Graft)
// with its words, to the statement's end.
type Script struct {
	// Qdisc is the qdisc statement's settings: Handle, Default, R2Q,
	// DirectQLen.
	Qdisc   Config
	Classes []ClassConfig
	Filters []Filter // in the order given
	// FQCoDel are the leaf classes fq_codel is grafted on, in order.
	FQCoDel []uint32
	// Grafts are the leaves other kinds are grafted on with their words
	// (netem), in order.
	Grafts []Graft

	// leaf is the fq_codel a runtime grafts on each of them, with its
	// knobs (Kind's Graft); its Kind nil for fq_codel's defaults. It is
	// not among the words.
	leaf qdisc.Child
}

// Filter is a filter statement: its rule and the class whose chain it
// joins (0: the qdisc's root chain).
type Filter struct {
	Parent uint32
	Rule   classify.Rule
}

// String writes f in ParseFilter's words.
func (f Filter) String() string { return FilterString(f.Parent, f.Rule) }

// Statement is one statement of a script: its keyword ("qdisc", "class",
// "filter", or any other a reader of statements takes) and the rest of
// its words.
type Statement struct {
	Keyword, Words string
}

// Statements splits text into its statements, at ";" and newlines,
// leaving out comments ("#" to the end of its line, as in a tc batch
// file or a shell script) and empty statements.
func Statements(text string) []Statement {
	var out []Statement
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i], _, _ = strings.Cut(l, "#")
	}
	text = strings.Join(lines, "\n")
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		kw, rest, _ := strings.Cut(line, " ")
		out = append(out, Statement{kw, strings.TrimSpace(rest)})
	}
	return out
}

// ParseScript reads an htb script and checks it whole (Script.Validate);
// an error names the statement.
func ParseScript(text string) (Script, error) { return parseScript(text, false) }

// ParsePodScript is ParseScript for a pod's words (the htb Kind's
// ParsePod): a leaf's kind reads its words with its own ParsePod, so that
// no word of a pod's makes the runtime open a host's file (netem's
// distribution FILE).
func ParsePodScript(text string) (Script, error) { return parseScript(text, true) }

// parseScript is ParseScript, with a pod's words where pod is set.
func parseScript(text string, pod bool) (Script, error) {
	var s Script
	for i, st := range Statements(text) {
		switch st.Keyword {
		case "qdisc":
			if strings.HasPrefix(st.Words, "parent ") {
				id, g, err := parseGraft(st.Words, pod)
				if err != nil {
					return Script{}, fmt.Errorf("statement %d (qdisc %s): %w", i+1, st.Words, err)
				}
				if g != nil {
					s.Grafts = append(s.Grafts, *g)
				} else {
					s.FQCoDel = append(s.FQCoDel, id)
				}
				continue
			}
			if i != 0 {
				return Script{}, fmt.Errorf("statement %d (qdisc %s): the qdisc statement comes first, once", i+1, st.Words)
			}
			q, err := ParseQdisc(st.Words)
			if err != nil {
				return Script{}, fmt.Errorf("statement %d (qdisc %s): %w", i+1, st.Words, err)
			}
			s.Qdisc = q
		case "class":
			c, err := ParseClass(st.Words)
			if err != nil {
				return Script{}, fmt.Errorf("statement %d (class %s): %w", i+1, st.Words, err)
			}
			s.Classes = append(s.Classes, c)
		case "filter":
			f, err := parseFilter(st.Words)
			if err != nil {
				return Script{}, fmt.Errorf("statement %d (filter %s): %w", i+1, st.Words, err)
			}
			s.Filters = append(s.Filters, f)
		default:
			return Script{}, fmt.Errorf("statement %d: %q: each statement starts with qdisc, class or filter", i+1, st.Keyword)
		}
	}
	if len(s.Classes) == 0 {
		return Script{}, errors.New("no class: give at least one, such as class root classid 1:1 rate 10mbit")
	}
	if err := s.Validate(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// Validate checks s whole: its tree (Config.Validate) and its grafts (on
// leaves that exist, once each).
func (s Script) Validate() error {
	if err := s.Tree(classify.Egress).Validate(); err != nil {
		return err
	}
	return s.checkGrafts()
}

// Tree returns the Config of the script for packets travelling in
// direction dir, every leaf with its default pfifo: the tree to check or
// model, with no qdisc built for a leaf (Config builds them).
func (s Script) Tree(dir classify.Direction) Config {
	c := s.Qdisc
	c.Classes = append([]ClassConfig(nil), s.Classes...)
	c.Rules, c.Chains = nil, nil
	for _, f := range s.Filters {
		if f.Parent == 0 {
			c.Rules = append(c.Rules, f.Rule)
			continue
		}
		if c.Chains == nil {
			c.Chains = map[uint32][]classify.Rule{}
		}
		c.Chains[f.Parent] = append(c.Chains[f.Parent], f.Rule)
	}
	c.Direction = dir
	return c
}

// Config returns the Config of the script for packets travelling in
// direction dir (Tree), with mtu not 0 each leaf the script grafts
// fq_codel on given one of its own, configured as fq (a runtime's knobs:
// runsc's --qdisc-fq-codel-* flags; the zero Config for fq_codel's
// defaults) for a link whose MTU plus header is mtu, and each of its
// Grafts its kind's queue. With mtu 0 it is Tree's. An error is
// fqcodel.NewQueue's, about fq, or a grafted kind's.
func (s Script) Config(dir classify.Direction, fq fqcodel.Config, mtu uint32) (Config, error) {
	cfg := s.Tree(dir)
	if mtu == 0 {
		return cfg, nil
	}
	for _, id := range s.FQCoDel {
		q, err := fqcodel.NewQueue(fq, mtu, nil)
		if err != nil {
			return Config{}, err
		}
		cfg.Classes[classIndex(cfg.Classes, id)].Leaf = q
	}
	if err := s.graftLeaves(&cfg, mtu); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// parseFilter reads a filter statement's words.
func parseFilter(text string) (Filter, error) {
	parent, r, err := ParseFilter(text)
	return Filter{parent, r}, err
}

// Chain returns the filters of the chain of class id (0: the root
// chain), in order.
func (s Script) Chain(id uint32) []Filter {
	var out []Filter
	for _, f := range s.Filters {
		if f.Parent == id {
			out = append(out, f)
		}
	}
	return out
}

// String writes the script back in its own words, one statement after
// another, separated by "; ": ParseScript reads it back to the same
// Script.
func (s Script) String() string {
	var parts []string
	if q := qdiscWords(s.Qdisc); q != "" {
		parts = append(parts, "qdisc "+q)
	}
	for _, c := range s.Classes {
		parts = append(parts, "class "+c.String())
	}
	for _, id := range s.FQCoDel {
		parts = append(parts, "qdisc parent "+classify.ClassID(id)+" fq_codel")
	}
	for _, g := range s.Grafts {
		parts = append(parts, "qdisc "+g.String())
	}
	for _, f := range s.Filters {
		parts = append(parts, "filter "+f.String())
	}
	return strings.Join(parts, "; ")
}

// qdiscWords writes the qdisc's settings that are not the defaults in
// ParseQdisc's words ("" when all are).
func qdiscWords(c Config) string {
	var w []string
	if c.Handle != 0 && c.Handle != 1<<16 {
		w = append(w, fmt.Sprintf("handle %x:", c.Handle>>16))
	}
	if c.Default != 0 {
		w = append(w, fmt.Sprintf("default %x", c.Default&0xffff))
	}
	if c.R2Q != 0 && c.R2Q != DefaultR2Q {
		w = append(w, fmt.Sprintf("r2q %d", c.R2Q))
	}
	if c.DirectQLen != 0 && c.DirectQLen != DefaultDirectQLen {
		w = append(w, fmt.Sprintf("direct_qlen %d", c.DirectQLen))
	}
	return strings.Join(w, " ")
}
