package htb

import (
	"encoding/json"
	"fmt"
	"slices"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// classMetrics are htb's per-class counters, as `tc -s class show` prints
// them, each read from a class's ClassStats: the names, meanings and path
// runsc has exported per class (/network/qdisc/class/sent_bytes, Under
// "class/"), and the packets a class lent and borrowed.
var classMetrics = []struct {
	qdisc.Metric
	read func(ClassStats) uint64
}{
	{qdisc.Metric{Name: "sent_bytes", Member: "class", Under: "class/", Help: "Bytes the class sent (tc -s class: Sent bytes).", Cumulative: true}, func(c ClassStats) uint64 { return c.Bytes }},
	{qdisc.Metric{Name: "sent_packets", Member: "class", Under: "class/", Help: "Packets the class sent (tc -s class: pkt).", Cumulative: true}, func(c ClassStats) uint64 { return c.Packets }},
	{qdisc.Metric{Name: "dropped_packets", Member: "class", Under: "class/", Help: "Packets the class's queue dropped (tc -s class: dropped).", Cumulative: true}, func(c ClassStats) uint64 { return c.Drops }},
	{qdisc.Metric{Name: "overlimits", Member: "class", Under: "class/", Help: "Times the class went over its ceil (tc -s class: overlimits).", Cumulative: true}, func(c ClassStats) uint64 { return c.Overlimits }},
	{qdisc.Metric{Name: "lended_packets", Member: "class", Under: "class/", Help: "Packets the class sent at its own level: within its rate, or lent to a class under it (tc -s class: lended).", Cumulative: true}, func(c ClassStats) uint64 { return c.Lends }},
	{qdisc.Metric{Name: "borrowed_packets", Member: "class", Under: "class/", Help: "Packets classes under it sent with tokens borrowed from the class (tc -s class: borrowed).", Cumulative: true}, func(c ClassStats) uint64 { return c.Borrows }},
	{qdisc.Metric{Name: "backlog_bytes", Member: "class", Under: "class/", Help: "Bytes queued in the class now (tc -s class: backlog)."}, func(c ClassStats) uint64 { return c.BacklogBytes }},
	{qdisc.Metric{Name: "quota_used_bytes", Member: "class", Under: "class/", Help: "Bytes counted against the class's quota this period (0 without one)."}, func(c ClassStats) uint64 { return c.QuotaUsed }},
}

// Kind is htb as a runtime knows it (qdisc.Register): a Script's words
// (Parse; Options are the Script), both paths (a leaf the script grafts
// fq_codel on gets the fq_codel a runtime grafts there, with its knobs,
// by Graft; fq_codel's defaults without one), its classes changed in place
// (Change), its classes' counters as metrics (members the classes, as tc
// prints them: "1:10"), its quotas' counters kept by a checkpoint, and a
// pod's script held to the operator's (Tighten: Script.Tighten, the rule
// runsc's annotations of --qdisc-htb meet). It has no Fit (Fit fits a
// tree under a bandwidth).
var Kind = qdisc.Typed[Script, *Discipline]{
	Name:     "htb",
	Usage:    "Hierarchical token bucket classes, as a script of tc's statements: qdisc (default, r2q, direct_qlen), class (rate, ceil, burst, cburst, prio, quantum, quota), filter (dst, src, proto, sport, dport, dscp, classid; parent 1:10 for a class's chain), and qdisc parent 1:20 fq_codel (or netem delay 100ms, with its words) on a leaf.",
	Example:  "qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 900mbit ceil 1gbit; class parent 1:1 classid 1:20 rate 10mbit; filter dst 10.0.0.0/8 classid 1:10; qdisc parent 1:20 fq_codel",
	Parse:    ParseScript,
	ParsePod: ParsePodScript,
	New: func(lower stack.LinkEndpoint, clock tcpip.Clock, s Script) (*Discipline, error) {
		cfg, err := s.grafted(classify.Egress, frameMTU(lower))
		if err != nil {
			return nil, err
		}
		return s.keepGrafts(New(lower, clock, cfg))
	},
	NewTo: func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, s Script) (*Discipline, error) {
		cfg, err := s.grafted(classify.Ingress, frameMTU(link))
		if err != nil {
			return nil, err
		}
		return s.keepGrafts(NewTo(out, link, clock, cfg))
	},
	Change:  (*Discipline).changeClasses,
	Tighten: Script.Tighten,
	Graft: func(s Script, _ uint32, child func(kind string) (qdisc.Child, error)) (Script, error) {
		if len(s.FQCoDel) == 0 {
			return s, nil
		}
		c, err := child(fqcodel.Kind.Name)
		if err != nil {
			return Script{}, err
		}
		s.leaf = c
		return s, nil
	},
	Metrics: func() []qdisc.Metric {
		var ms []qdisc.Metric
		for _, m := range classMetrics {
			ms = append(ms, m.Metric)
		}
		return ms
	}(),
	Members: func(s Script) []string {
		var ids []string
		for _, c := range s.Classes {
			ids = append(ids, classify.ClassID(c.ID))
		}
		return ids
	},
	Samples: func(q *Discipline) []qdisc.Sample {
		var out []qdisc.Sample
		for _, c := range q.Classes() {
			for _, m := range classMetrics {
				out = append(out, qdisc.Sample{Metric: m.Name, Member: classify.ClassID(c.ID), Value: m.read(c)})
			}
		}
		return out
	},
	Save: func(q *Discipline) []byte {
		states := q.Quotas()
		if len(states) == 0 {
			return nil
		}
		b, err := json.Marshal(states)
		if err != nil {
			panic(fmt.Sprintf("htb: quotas %+v: %v", states, err)) // plain numbers: cannot fail
		}
		return b
	},
	Restore: func(q *Discipline, state []byte) error {
		var states []QuotaState
		if err := json.Unmarshal(state, &states); err != nil {
			return fmt.Errorf("htb: the quotas' state: %w", err)
		}
		return q.RestoreQuotas(states)
	},
}.Kind()

func init() { qdisc.Register(Kind) }

var _ qdisc.Discipline = (*Discipline)(nil)

// grafted is s's Config for a link whose largest frame is mtu (Config),
// each leaf s grafts fq_codel on given the queue the runtime's fq_codel
// builds (Graft), or one of fq_codel's defaults where none was grafted,
// and each of its Grafts its kind's queue, built from its own words.
func (s Script) grafted(dir classify.Direction, mtu uint32) (Config, error) {
	if s.leaf.Kind == nil || mtu == 0 {
		return s.Config(dir, fqcodel.Config{}, mtu)
	}
	cfg := s.Tree(dir)
	for _, id := range s.FQCoDel {
		q, err := s.leaf.NewQueue(mtu)
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

// frameMTU is the largest frame link takes, its MTU and link header, which
// a grafted fq_codel is made for; 0 for no link (New refuses it).
func frameMTU(link stack.LinkEndpoint) uint32 {
	if link == nil {
		return 0
	}
	return link.MTU() + uint32(link.MaxHeaderLength())
}

// changeClasses changes d's classes in place to s's (ChangeClass, each
// class whose settings differ, in s's order): s has d's classes, qdisc
// words, filters and grafted leaves, which a running tree keeps.
func (d *Discipline) changeClasses(s Script) error {
	if err := s.Validate(); err != nil {
		return err
	}
	var cur Config
	d.lanes.Lanes[0].Locked(func() {
		cur = d.tree.cfg
		cur.Classes = slices.Clone(cur.Classes)
	})
	next := s.Tree(cur.Direction).withDefaults()
	if got, want := qdiscWords(next), qdiscWords(cur); got != want {
		return fmt.Errorf("htb: qdisc %q: the qdisc's words stay as they are (%q) in a running tree; change classes", got, want)
	}
	if !sameFilters(cur, next) {
		return fmt.Errorf("htb: the filters stay as they are in a running tree; change classes")
	}
	var grafted []uint32
	for _, c := range cur.Classes {
		if c.Leaf != nil {
			grafted = append(grafted, c.ID)
		}
	}
	if ids, _ := s.grafts(); !sameSet(grafted, ids) || s.graftWords() != d.grafts {
		return fmt.Errorf("htb: the leaves' qdiscs stay as they are in a running tree; change classes")
	}
	var changed []ClassConfig
	for i, c := range next.Classes {
		j := classIndex(cur.Classes, c.ID)
		if j < 0 {
			return fmt.Errorf("htb: class %s is not in the running tree; classes are not added to a running tree", classify.ClassID(c.ID))
		}
		if cur.Classes[j].String() != c.String() {
			changed = append(changed, s.Classes[i])
		}
	}
	for _, c := range cur.Classes {
		if classIndex(next.Classes, c.ID) < 0 {
			return fmt.Errorf("htb: class %s is missing; classes are not removed from a running tree", classify.ClassID(c.ID))
		}
	}
	for _, c := range changed {
		if err := d.ChangeClass(c); err != nil {
			return err
		}
	}
	return nil
}

// sameFilters reports whether a and b have the same root chain and the
// same chains of classes.
func sameFilters(a, b Config) bool {
	same := func(x, y []classify.Rule) bool {
		return slices.EqualFunc(x, y, func(r, s classify.Rule) bool { return r.String() == s.String() })
	}
	if !same(a.Rules, b.Rules) || len(a.Chains) != len(b.Chains) {
		return false
	}
	for id, rules := range a.Chains {
		if !same(rules, b.Chains[id]) {
			return false
		}
	}
	return true
}

// sameSet reports whether a and b hold the same ids.
func sameSet(a, b []uint32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
