package runscflags

import (
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestHTBFlags: --qdisc=htb builds htb from --qdisc-htb, and
// --qdisc-ingress-htb the receive path's classes; what does not make an
// htb is refused, naming the flag to change.
func TestHTBFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		says string // "" for accepted
	}{
		{"egress classes", []string{"--qdisc=htb", "--qdisc-htb=" + htbSample}, ""},
		{"fq_codel leaves", []string{"--qdisc=htb", "--qdisc-htb=" + htbSample + "; qdisc parent 1:20 fq_codel", "--qdisc-ingress-htb=" + htbSample + "; qdisc parent 1:10 fq_codel"}, ""},
		{"fq_codel on an inner class", []string{"--qdisc=htb", "--qdisc-htb=" + htbSample + "; qdisc parent 1:1 fq_codel"}, "has children; only a leaf takes a qdisc"},
		{"fq_codel on no class", []string{"--qdisc=htb", "--qdisc-htb=" + htbSample + "; qdisc parent 1:99 fq_codel"}, "no class 1:99"},
		{"another leaf qdisc", []string{"--qdisc=htb", "--qdisc-htb=" + htbSample + "; qdisc parent 1:20 sfq"}, `"sfq": a leaf takes fq_codel`},
		{"ingress classes", []string{"--qdisc-ingress-htb=" + htbSample}, ""},
		{"htb without classes", []string{"--qdisc=htb"}, "--qdisc=htb requires --qdisc-htb"},
		{"classes without htb", []string{"--qdisc=tbf", "--qdisc-tbf-rate=1mbit", "--qdisc-tbf-burst=1514", "--qdisc-htb=" + htbSample}, "needs --qdisc=htb"},
		{"ingress tbf and classes", []string{"--qdisc-ingress-rate=1mbit", "--qdisc-ingress-burst=1514", "--qdisc-ingress-htb=" + htbSample}, "give one of them"},
		{"a bad word", []string{"--qdisc=htb", "--qdisc-htb=class root classid 1:1 rate 10mbit speed 3"}, `unknown word "speed"`},
		{"a bad statement", []string{"--qdisc=htb", "--qdisc-htb=klass root classid 1:1 rate 10mbit"}, "starts with qdisc, class or filter"},
		{"no class", []string{"--qdisc=htb", "--qdisc-htb=qdisc default 10"}, "no class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.args...)
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("parse(%q): %v; want an error saying %q", tc.args, err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			clock := faketime.NewManualClock()
			link := qdisctest.NewLink(clock)
			q, err := c.NewQueueingDiscipline(link, clock)
			if err != nil {
				t.Fatal(err)
			}
			if q != nil {
				defer q.Close()
			}
			if _, ok := q.(*htb.Discipline); ok != (c.QDisc == QDiscHTB) {
				t.Errorf("qdisc %T for --qdisc=%v", q, c.QDisc)
			}
			in, err := c.NewIngress(link, clock)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if (in.HTB() != nil) != (c.IngressHTB != "") {
				t.Errorf("ingress classes %v for --qdisc-ingress-htb=%q", in.HTB(), c.IngressHTB)
			}
			// Each leaf has the qdisc its script grafts on it, fq_codel or
			// the default pfifo.
			for _, dir := range []struct {
				text    string
				classes []htb.ClassStats
			}{{c.HTB, classesOf(q)}, {c.IngressHTB, in.Classes()}} {
				for _, cs := range dir.classes {
					want := "pfifo"
					if strings.Contains(dir.text, "qdisc parent "+classify.ClassID(cs.ID)+" fq_codel") {
						want = "fq_codel"
					}
					if cs.Level == 0 && !strings.HasPrefix(cs.Leaf, want) {
						t.Errorf("class %s's leaf is %q, want %s", classify.ClassID(cs.ID), cs.Leaf, want)
					}
				}
			}
		})
	}
}

// TestHTBAnnotations: a pod's annotation may lower a class, add or lower
// a quota, and split an operator's leaf (or its own class) into classes
// no looser, with a chain of filters that keeps the leaf's packets under
// it; it may not raise a class, move one, add a filter anywhere else, let
// packets escape a class, or drop the operator's quota, unless
// --allow-flag-override. A refusal names the annotation and the class or
// ceiling.
func TestHTBAnnotations(t *testing.T) {
	// htbSample: 1:1 (1gbit) over 1:10 (the cluster, 990mbit ceil 1gbit,
	// filter dst 10.0.0.0/8) and 1:20 (10mbit, the default); here also
	// 1:30 (prio 2, a quota) and a filter to 1:99, no class.
	const quota = "; class parent 1:1 classid 1:30 rate 1mbit prio 2 quota 1gb per 24h then 1mbit; filter dst 172.16.0.0/12 classid 1:99"
	const split = "class parent 1:10 classid 1:11 rate 500mbit ceil 800mbit; class parent 1:10 classid 1:12 rate 100mbit; "
	for _, tc := range []struct {
		name, value string
		override    bool
		fqCoDel     bool   // fq_codel grafted on 1:30
		says        string // "" for accepted
	}{
		{name: "lower a ceil", value: "class classid 1:20 ceil 5mbit"},
		{name: "lower a rate and its burst", value: "class classid 1:20 rate 5mbit burst 1000"},
		{name: "add a quota", value: "class classid 1:20 quota 50gb per 24h then 1mbit"},
		{name: "lower a quota", value: "class classid 1:30 quota 500mb per 24h then block"},
		{name: "raise a rate", value: "class classid 1:20 rate 20mbit", says: "rate 2500000 is above the operator's 1250000"},
		{name: "raise a ceil", value: "class classid 1:10 ceil 2gbit", says: "ceil"},
		{name: "split a leaf", value: split + "filter parent 1:10 dst 10.1.0.0/16 proto tcp classid 1:11; filter parent 1:10 classid 1:12"},
		{name: "split twice", value: "class parent 1:30 classid 1:31 rate 1mbit prio 2; class parent 1:31 classid 1:32 rate 500kbit prio 3; class parent 1:31 classid 1:33 rate 500kbit prio 2; " +
			"filter parent 1:30 classid 1:31; filter parent 1:31 dport 53 proto udp classid 1:32; filter parent 1:31 classid 1:33"},
		{name: "split and lower", value: "class classid 1:10 ceil 900mbit; class parent 1:10 classid 1:11 rate 1mbit ceil 900mbit; filter parent 1:10 classid 1:11"},
		{name: "a split without a catch-all", value: split + "filter parent 1:10 dst 10.1.0.0/16 classid 1:11", says: "would go to the default class, out of 1:10 and its ceiling; end its filters with a catch-all into a class under it, as filter parent 1:10 classid 1:11"},
		{name: "a split without filters", value: "class parent 1:10 classid 1:11 rate 1mbit", says: "end its filters with a catch-all"},
		{name: "a catch-all before a filter out", value: split + "filter parent 1:10 classid 1:12; filter parent 1:10 classid 1:20", says: "sends packets of class 1:10 to 1:20, out of 1:10"},
		{name: "a filter into another class", value: split + "filter parent 1:10 dst 8.8.8.8/32 classid 1:20; filter parent 1:10 classid 1:12", says: "sends packets of class 1:10 to 1:20, out of 1:10 and its ceiling"},
		{name: "a filter to the direct queue", value: split + "filter parent 1:10 classid 1:0", says: "to 1:0, out of 1:10"},
		{name: "a filter to itself", value: split + "filter parent 1:10 classid 1:10", says: "whose chain leads back here: a loop"},
		{name: "a child above its parent's ceil", value: "class parent 1:10 classid 1:11 rate 1mbit ceil 2gbit; filter parent 1:10 classid 1:11", says: "class 1:11: ceil 250000000 bytes/s (2Gbit) is above the ceil of its parent 1:10, 125000000 bytes/s"},
		{name: "a child above a lowered ceil", value: "class classid 1:10 ceil 500mbit; class parent 1:10 classid 1:11 rate 1mbit ceil 600mbit; filter parent 1:10 classid 1:11", says: "is above the ceil of its parent 1:10"},
		{name: "a child's rate above its parent's ceil", value: "class parent 1:10 classid 1:11 rate 2gbit ceil 1gbit; filter parent 1:10 classid 1:11", says: "rate 250000000 bytes/s (2Gbit) is above the ceil of its parent 1:10"},
		{name: "a grandchild above its parent", value: "class parent 1:10 classid 1:11 rate 1mbit; class parent 1:11 classid 1:12 rate 2mbit; filter parent 1:10 classid 1:11; filter parent 1:11 classid 1:12", says: "class 1:12: ceil 250000 bytes/s (2Mbit) is above the ceil of its parent 1:11"},
		{name: "a nested split without a catch-all", value: "class parent 1:10 classid 1:11 rate 1mbit; class parent 1:11 classid 1:12 rate 1mbit; filter parent 1:10 classid 1:11", says: "class 1:11 has children"},
		{name: "split the default class", value: "class parent 1:20 classid 1:21 rate 1mbit; filter parent 1:20 classid 1:21", says: "class 1:20 is the default class"},
		{name: "a prio ahead of the split class", value: "class parent 1:30 classid 1:31 rate 1mbit prio 1; filter parent 1:30 classid 1:31", says: "prio 1 is ahead of the prio 2 of the operator's class 1:30"},
		{name: "a class at the top", value: "class root classid 1:5 rate 1mbit", says: "top of the tree"},
		{name: "a class an operator's filter names", value: "class parent 1:10 classid 1:99 rate 1mbit; filter parent 1:10 classid 1:99", says: "the operator's filter dst 172.16.0.0/12 classid 1:99 names it"},
		{name: "a filter on an operator's inner class", value: "filter parent 1:1 dst 10.0.0.0/8 classid 1:20", says: "the chain of class 1:1, an inner class of the operator's, is the operator's"},
		{name: "a filter on a leaf", value: "filter parent 1:10 classid 1:10", says: "class 1:10 has no children, so its filters never run"},
		{name: "a root filter", value: "filter dst 0.0.0.0/0 classid 1:10", says: "a filter of the qdisc's root chain would move packets between the operator's classes"},
		{name: "a root filter into a split", value: split + "filter parent 1:10 classid 1:12; filter dst 0.0.0.0/0 classid 1:11", says: "root chain"},
		{name: "a split of an fq_codel leaf", value: "class parent 1:30 classid 1:31 rate 1mbit prio 2; filter parent 1:30 classid 1:31", fqCoDel: true, says: "only a leaf takes a qdisc"},
		{name: "move a class", value: "class classid 1:20 parent 1:10", says: "keeps a class where it is"},
		{name: "the qdisc", value: "qdisc default 10", says: "the qdisc's"},
		{name: "drop a quota", value: "class classid 1:30 noquota", says: "cannot be removed"},
		{name: "a looser quota", value: "class classid 1:30 quota 2gb", says: "looser"},
		{name: "a quota's period", value: "class classid 1:30 per 12h", says: "looser"},
		{name: "prio", value: "class classid 1:20 prio 1 rate 5mbit", says: "prio and quantum"},
		{name: "a reset", value: "reset classid 1:30", says: "only the operator"},
		{name: "raise with override", value: "class classid 1:20 rate 20mbit", override: true},
		{name: "add with override", value: "class parent 1:20 classid 1:21 rate 1mbit", override: true},
		{name: "a root filter with override", value: "filter dst 0.0.0.0/0 classid 1:10", override: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--qdisc=htb", "--qdisc-htb=" + htbSample + quota}
			if tc.fqCoDel {
				args[1] += "; qdisc parent 1:30 fq_codel"
			}
			if tc.override {
				args = append(args, "--allow-flag-override")
			}
			c, err := parse(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			before := c.HTB
			err = c.ApplyAnnotations(map[string]string{AnnotationPrefix + FlagHTB: tc.value})
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), AnnotationPrefix+FlagHTB) {
					t.Fatalf("ApplyAnnotations(%q): %v; want an error naming the annotation and saying %q", tc.value, err, tc.says)
				}
				if c.HTB != before {
					t.Errorf("a refused annotation changed --qdisc-htb to %q", c.HTB)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.HTB == before {
				t.Errorf("ApplyAnnotations(%q) changed nothing", tc.value)
			}
		})
	}
}

// TestHTBKubernetes: kubernetes.io/egress-bandwidth lowers the top of an
// htb tree, and the qdisc stays htb.
func TestHTBKubernetes(t *testing.T) {
	c, err := parse(t, "--qdisc=htb", "--qdisc-htb="+htbSample)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyAnnotations(map[string]string{AnnotationKubeEgress: "5M"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.HTBConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.QDisc != QDiscHTB || cfg.Classes[0].Rate != 625_000 || cfg.Classes[0].Ceil != 625_000 {
		t.Errorf("after a 5M egress bandwidth: qdisc %v, top class %+v; want htb with rate and ceil 625000 bytes/s", c.QDisc, cfg.Classes[0])
	}
}

// TestHTBTightenInvariant is the annotation policy's property: for random
// operator trees and random annotations, whatever ApplyAnnotations
// accepts shapes every packet at least as tightly: the chain of classes
// a packet passes, leaf to top, is the operator's, each class's rate,
// ceil and bursts no higher, and each quota of the operator's kept no
// looser.
func TestHTBTightenInvariant(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	accepted := 0
	for i := 0; i < 1000; i++ {
		op := randomScript(rng)
		c, err := parse(t, "--qdisc=htb", "--qdisc-htb="+op)
		if err != nil {
			t.Fatalf("operator script %q: %v", op, err)
		}
		ann := randomUpdate(rng)
		if c.ApplyAnnotations(map[string]string{AnnotationPrefix + FlagHTB: ann}) != nil {
			continue
		}
		accepted++
		before, _ := parseScript(op)
		after, err := parseScript(c.HTB)
		if err != nil {
			t.Fatal(err)
		}
		bc, ac := before.config(classify.Egress), after.config(classify.Egress)
		for j := 0; j < 50; j++ {
			dst := netip.AddrFrom4([4]byte{byte(rng.Intn(3) * 10), byte(rng.Intn(256)), 1, 2})
			cb, ca := chainOf(bc, dst), chainOf(ac, dst)
			if len(cb) != len(ca) {
				t.Fatalf("op %q, annotation %q: a packet to %v passes %d classes, %d before", op, ann, dst, len(ca), len(cb))
			}
			for k := range cb {
				o, n := effective(cb[k]), effective(ca[k])
				if o.ID != n.ID || n.Rate > o.Rate || n.Ceil > o.Ceil || n.Burst > o.Burst || n.CBurst > o.CBurst {
					t.Fatalf("op %q, annotation %q: to %v, class %x became %+v from %+v", op, ann, dst, o.ID, n, o)
				}
				if q := o.Quota; q != nil && (n.Quota == nil || n.Quota.Bytes > q.Bytes || n.Quota.Rate > q.Rate || n.Quota.Period != q.Period) {
					t.Fatalf("op %q, annotation %q: class %x's quota %v became %v", op, ann, o.ID, q, n.Quota)
				}
			}
		}
	}
	if accepted < 100 {
		t.Errorf("only %d of 1000 random annotations accepted: the property is barely exercised", accepted)
	}
}

// chainOf returns the classes a packet to dst passes under cfg, leaf
// first (nil: the direct queue), as htb classifies it.
func chainOf(cfg htb.Config, dst netip.Addr) []htb.ClassConfig {
	byID := map[uint32]htb.ClassConfig{}
	inner := map[uint32]bool{}
	for _, c := range cfg.Classes {
		byID[c.ID] = c
		inner[c.Parent] = true
	}
	leaf := uint32(0)
	for _, r := range cfg.Rules {
		if r.Dst.Contains(dst) {
			leaf = r.Class
			break
		}
	}
	if _, ok := byID[leaf]; !ok || inner[leaf] {
		leaf = cfg.Default
	}
	if _, ok := byID[leaf]; !ok || inner[leaf] {
		return nil
	}
	var chain []htb.ClassConfig
	for id := leaf; id != 0; {
		c, ok := byID[id]
		if !ok {
			break
		}
		chain = append(chain, c)
		id = c.Parent
	}
	return chain
}

// randomScript is a random operator tree: a top class, two to four
// leaves under it, some with quotas, filters by destination.
func randomScript(rng *rand.Rand) string {
	var b strings.Builder
	n := 2 + rng.Intn(3)
	fmt.Fprintf(&b, "qdisc default %x; class root classid 1:1 rate %dmbit", 0x10+rng.Intn(n), 100+rng.Intn(900))
	for i := range n {
		fmt.Fprintf(&b, "; class parent 1:1 classid 1:%x rate %dmbit ceil %dmbit prio %d", 0x10+i, 1+rng.Intn(50), 50+rng.Intn(50), rng.Intn(3))
		if rng.Intn(3) == 0 {
			fmt.Fprintf(&b, " quota %dmb per 24h then %dkbit", 1+rng.Intn(1000), rng.Intn(1000))
		}
	}
	for i := range 3 {
		fmt.Fprintf(&b, "; filter dst %d.0.0.0/8 classid 1:%x", i*10, 0x10+rng.Intn(n))
	}
	return b.String()
}

// randomUpdate is a random annotation: class statements raising or
// lowering settings, quotas, and now and then a word that is never
// allowed.
func randomUpdate(rng *rand.Rand) string {
	var parts []string
	for range 1 + rng.Intn(2) {
		id := 0x10 + rng.Intn(5)
		words := []string{fmt.Sprintf("class classid 1:%x", id)}
		switch rng.Intn(8) {
		case 0:
			words = append(words, fmt.Sprintf("rate %dmbit", 1+rng.Intn(60)))
		case 1:
			words = append(words, fmt.Sprintf("ceil %dmbit", 1+rng.Intn(120)))
		case 2:
			words = append(words, fmt.Sprintf("burst %d cburst %d", 1000+rng.Intn(2000), 1000+rng.Intn(2000)))
		case 3:
			words = append(words, fmt.Sprintf("quota %dmb per 24h then %dkbit", 1+rng.Intn(2000), rng.Intn(2000)))
		case 4:
			words = append(words, "noquota")
		case 5:
			words = append(words, fmt.Sprintf("prio %d", rng.Intn(3)))
		case 6:
			words = []string{fmt.Sprintf("filter dst 0.0.0.0/0 classid 1:%x", id)}
		case 7:
			words = append(words, fmt.Sprintf("parent 1:%x", 0x10+rng.Intn(5)))
		}
		parts = append(parts, strings.Join(words, " "))
	}
	return strings.Join(parts, "; ")
}

// classesOf returns q's classes, if it is htb.
func classesOf(q any) []htb.ClassStats {
	if h, ok := q.(*htb.Discipline); ok {
		return h.Classes()
	}
	return nil
}
