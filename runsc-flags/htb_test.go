package runscflags

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

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
			if _, ok := q.(*htb.Discipline); ok != (c.QDisc == "htb") {
				t.Errorf("qdisc %T for --qdisc=%v", q, c.QDisc)
			}
			in, err := c.NewIngress(link, clock)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if (ingressHTB(in) != nil) != (c.IngressHTB != "") {
				t.Errorf("ingress classes %v for --qdisc-ingress-htb=%q", ingressHTB(in), c.IngressHTB)
			}
			// Each leaf has the qdisc its script grafts on it, fq_codel or
			// the default pfifo.
			for _, dir := range []struct {
				text    string
				classes []htb.ClassStats
			}{{c.HTB, classesOf(q)}, {c.IngressHTB, classesOf(in.Whole())}} {
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
		{name: "raise a rate", value: "class classid 1:20 rate 20mbit", says: "rate 20Mbit is above the operator's 10Mbit"},
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
		{name: "a child above its parent's ceil", value: "class parent 1:10 classid 1:11 rate 1mbit ceil 2gbit; filter parent 1:10 classid 1:11", says: "class 1:11: ceil 2Gbit is above the ceil of its parent 1:10, 1Gbit"},
		{name: "a child above a lowered ceil", value: "class classid 1:10 ceil 500mbit; class parent 1:10 classid 1:11 rate 1mbit ceil 600mbit; filter parent 1:10 classid 1:11", says: "is above the ceil of its parent 1:10"},
		{name: "a child's rate above its parent's ceil", value: "class parent 1:10 classid 1:11 rate 2gbit ceil 1gbit; filter parent 1:10 classid 1:11", says: "rate 2Gbit is above the ceil of its parent 1:10"},
		{name: "a grandchild above its parent", value: "class parent 1:10 classid 1:11 rate 1mbit; class parent 1:11 classid 1:12 rate 2mbit; filter parent 1:10 classid 1:11; filter parent 1:11 classid 1:12", says: "class 1:12: ceil 2Mbit is above the ceil of its parent 1:11"},
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
		{name: "a quota's period", value: "class classid 1:30 per 12h", says: "the period of a quota is the operator's, 24h0m0s"},
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
	if c.QDisc != "htb" || cfg.Classes[0].Rate != 625_000 || cfg.Classes[0].Ceil != 625_000 {
		t.Errorf("after a 5M egress bandwidth: qdisc %v, top class %+v; want htb with rate and ceil 625000 bytes/s", c.QDisc, cfg.Classes[0])
	}
}

// TestHTBTightenInvariant is the annotation policy's property: for random
// operator trees (inner classes with chains of their own, root catch-alls,
// filters to no class or to the direct queue) and random annotations
// (settings raised and lowered, quotas, leaves split into nested classes
// with chains, filters anywhere), whatever ApplyAnnotations accepts shapes
// every packet at least as tightly. Packets, well-formed and hostile, are
// classified by htb's own trees (Tree.ClassOf, the packet path's
// classification) built from the scripts before and after: the classes a
// packet passes after, leaf to top, end with the classes it passed before,
// each no looser (rate, ceil, bursts, quota), and every class below them
// has a ceil no higher than its parent's; so its tightest ceiling is no
// higher. A packet that went to the direct queue before may go anywhere.
// 3000 rounds in the long run (qdisctest.Long), the first 1500 of them by
// default.
func TestHTBTightenInvariant(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	rng := rand.New(rand.NewPCG(1, 2))
	rounds := 1500
	if qdisctest.Long() {
		rounds = 3000
	}
	accepted, split, nested := 0, 0, 0
	for i := 0; i < rounds; i++ {
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
		if strings.Contains(ann, "filter parent") {
			split++
		}
		before, err := htb.ParseScript(op)
		if err != nil {
			t.Fatal(err)
		}
		after, err := htb.ParseScript(c.HTB)
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Classes) > len(before.Classes)+2 {
			nested++
		}
		bc, ac := before.Tree(classify.Egress), after.Tree(classify.Egress)
		bt, err := htb.NewTree(bc, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		at, err := htb.NewTree(ac, nil, 0)
		if err != nil {
			t.Fatalf("op %q, annotation %q: the accepted tree: %v", op, ann, err)
		}
		for j := 0; j < 60; j++ {
			pkt := randomPacket(rng)
			cb, ca := chainOf(bc, bt.ClassOf(pkt)), chainOf(ac, at.ClassOf(pkt))
			// Formatted only on a failure (it took a third of the test's time).
			data := pkt.Data().AsRange().ToSlice()
			what := func() string {
				return fmt.Sprintf("op %q, annotation %q: a packet (%v) passed %s, now %s", op, ann, data, chainIDs(cb), chainIDs(ca))
			}
			pkt.DecRef()
			if len(cb) == 0 {
				continue // the direct queue: anything is tighter
			}
			if len(ca) < len(cb) {
				t.Fatalf("%s: fewer classes", what())
			}
			added := len(ca) - len(cb)
			for k, o := range cb {
				o, n := effective(o), effective(ca[added+k])
				if o.ID != n.ID || n.Rate > o.Rate || n.Ceil > o.Ceil || n.Burst > o.Burst || n.CBurst > o.CBurst {
					t.Fatalf("%s: class %x became %+v from %+v", what(), o.ID, n, o)
				}
				if q := o.Quota; q != nil && (n.Quota == nil || n.Quota.Bytes > q.Bytes || n.Quota.Rate > q.Rate || n.Quota.Period != q.Period) {
					t.Fatalf("%s: class %x's quota %v became %v", what(), o.ID, q, n.Quota)
				}
			}
			for k := added - 1; k >= 0; k-- {
				if effective(ca[k]).Ceil > effective(ca[k+1]).Ceil {
					t.Fatalf("%s: class %x's ceil is above its parent's", what(), ca[k].ID)
				}
			}
		}
	}
	t.Logf("%d of %d random annotations accepted: %d splitting a class with a chain, %d adding three classes or more", accepted, rounds, split, nested)
	if accepted < rounds/10 || split < rounds/20 || nested < rounds/100 {
		t.Errorf("%d accepted, %d splits, %d nested splits of %d: the property is barely exercised", accepted, split, nested, rounds)
	}
}

// chainOf returns the classes of cfg from leaf up to the top (leaf first),
// none for the qdisc's handle (the direct queue).
func chainOf(cfg htb.Config, leaf uint32) []htb.ClassConfig {
	var chain []htb.ClassConfig
	for id := leaf; id != 0 && id&0xffff != 0; {
		j := classIndex(cfg.Classes, id)
		if j < 0 {
			break
		}
		chain = append(chain, cfg.Classes[j])
		id = cfg.Classes[j].Parent
	}
	return chain
}

func chainIDs(chain []htb.ClassConfig) string {
	var ids []string
	for _, c := range chain {
		ids = append(ids, classify.ClassID(c.ID))
	}
	return "[" + strings.Join(ids, " ") + "]"
}

// randomPacket is an IPv4 packet to one of the prefixes random scripts
// name (a.b.c.d, a of 0, 10, ..., 40, b of 0 to 4), TCP, UDP or ICMP to
// port 53, 80 or 443; or, one time in eight, a hostile one (often
// malformed, or not IP).
func randomPacket(rng *rand.Rand) *stack.PacketBuffer {
	if rng.IntN(8) == 0 {
		return qdisctest.HostilePacket(rng, qdisctest.HostileSize(rng)%200)
	}
	dst := netip.AddrFrom4([4]byte{byte(10 * rng.IntN(5)), byte(rng.IntN(5)), byte(rng.IntN(256)), 1})
	return ipv4Packet(dst, []byte{1, 6, 17}[rng.IntN(3)], []uint16{53, 80, 443}[rng.IntN(3)])
}

// randomScript is a random operator tree: a top class 1:1; two to four
// classes 1:10... under it, some with quotas, some inner classes with two
// leaves 1:1x1, 1:1x2 and a chain of their own (with or without a
// catch-all); a small class 1:f0; root filters by destination to those
// classes, now and then to no class or to the direct queue, and perhaps a
// catch-all; the default one of the leaves, 1:f0 or none.
func randomScript(rng *rand.Rand) string {
	var b strings.Builder
	n := 2 + rng.IntN(3)
	def := []int{0x10 + rng.IntN(n), 0xf0, 0xf0, 0}[rng.IntN(4)]
	fmt.Fprintf(&b, "qdisc default %x; class root classid 1:1 rate %dmbit", def, 100+rng.IntN(900))
	var targets []int
	for i := range n {
		id := 0x10 + i
		fmt.Fprintf(&b, "; class parent 1:1 classid 1:%x rate %dmbit ceil %dmbit prio %d", id, 1+rng.IntN(50), 50+rng.IntN(50), rng.IntN(3))
		if rng.IntN(3) == 0 {
			fmt.Fprintf(&b, " quota %dmb per 24h then %dkbit", 1+rng.IntN(1000), rng.IntN(1000))
		}
		targets = append(targets, id)
		if id != def && rng.IntN(4) == 0 { // an inner class of the operator's
			for j := 1; j <= 2; j++ {
				fmt.Fprintf(&b, "; class parent 1:%x classid 1:%x rate %dmbit ceil %dmbit", id, id*16+j, 1+rng.IntN(10), 10+rng.IntN(40))
			}
			fmt.Fprintf(&b, "; filter parent 1:%x dst %d.%d.0.0/16 classid 1:%x", id, 10*rng.IntN(5), rng.IntN(5), id*16+1)
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&b, "; filter parent 1:%x classid 1:%x", id, id*16+2)
			}
		}
	}
	b.WriteString("; class parent 1:1 classid 1:f0 rate 1mbit ceil 5mbit")
	targets = append(targets, 0xf0)
	for i := range 4 {
		to := fmt.Sprintf("1:%x", targets[rng.IntN(len(targets))])
		switch rng.IntN(10) {
		case 0:
			to = "1:99"
		case 1:
			to = "1:0"
		}
		fmt.Fprintf(&b, "; filter dst %d.0.0.0/8 classid %s", i*10, to)
	}
	if rng.IntN(3) == 0 {
		fmt.Fprintf(&b, "; filter classid 1:%x", targets[rng.IntN(len(targets))])
	}
	return b.String()
}

// randomUpdate is a random annotation: class statements raising or
// lowering settings, quotas, and now and then a word that is never
// allowed; or, half the time, a class split into children (and perhaps
// grandchildren) with a chain, now and then looser than the class, ahead
// of its prio, with a filter out of it or no catch-all.
func randomUpdate(rng *rand.Rand) string {
	var parts []string
	for range 1 + rng.IntN(2) {
		id := 0x10 + rng.IntN(5)
		if rng.IntN(2) == 0 {
			parts = append(parts, randomSplit(rng, id, 50+rng.IntN(60), 2))
			continue
		}
		words := []string{fmt.Sprintf("class classid 1:%x", id)}
		switch rng.IntN(9) {
		case 0:
			words = append(words, fmt.Sprintf("rate %dmbit", 1+rng.IntN(60)))
		case 1:
			words = append(words, fmt.Sprintf("ceil %dmbit", 1+rng.IntN(120)))
		case 2:
			words = append(words, fmt.Sprintf("burst %d cburst %d", 1000+rng.IntN(2000), 1000+rng.IntN(2000)))
		case 3:
			words = append(words, fmt.Sprintf("quota %dmb per 24h then %dkbit", 1+rng.IntN(2000), rng.IntN(2000)))
		case 4:
			words = append(words, "noquota")
		case 5:
			words = append(words, fmt.Sprintf("prio %d", rng.IntN(3)))
		case 6:
			words = []string{fmt.Sprintf("filter dst 0.0.0.0/0 classid 1:%x", id)}
		case 7:
			words = append(words, fmt.Sprintf("parent 1:%x", 0x10+rng.IntN(5)))
		case 8: // into the class's own chain, to a class under it, or not
			to := []int{id*16 + 2, 0x10 + rng.IntN(5)}[rng.IntN(2)]
			words = []string{fmt.Sprintf("filter parent 1:%x dst 0.0.0.0/1 classid 1:%x", id, to)}
		}
		parts = append(parts, strings.Join(words, " "))
	}
	return strings.Join(parts, "; ")
}

// randomSplit gives class id (of a ceil near ceil mbit) two children with
// a chain: a filter by destination to the first, a catch-all to the
// second; levels more below the first, now and then. Seven times in eight
// the children share the class (small rates, the first alone borrowing);
// else their rates are anything. Now and then the second is 1:99, which
// operators' filters may name.
func randomSplit(rng *rand.Rand, id, ceil, levels int) string {
	var parts []string
	kids := []int{id*16 + 1, id*16 + 2}
	if rng.IntN(8) == 0 {
		kids[1] = 0x99 // a classid some operators' filters name
	}
	fits := rng.IntN(8) != 0 // rates that add up to no more than the class's, one borrower
	for i, k := range kids {
		if fits {
			r := 1 + rng.IntN(250>>(2-levels))
			c := r
			if i == 0 {
				c = r + rng.IntN(ceil*400)
			}
			parts = append(parts, fmt.Sprintf("class parent 1:%x classid 1:%x rate %dkbit ceil %dkbit prio %d", id, k, r, c, 2+rng.IntN(3)-rng.IntN(2)))
			continue
		}
		parts = append(parts, fmt.Sprintf("class parent 1:%x classid 1:%x rate %dmbit ceil %dmbit prio %d", id, k, 1+rng.IntN(10), 1+rng.IntN(ceil), 2+rng.IntN(3)-rng.IntN(2)))
	}
	to := kids[0]
	if rng.IntN(10) == 0 {
		to = 0x10 + rng.IntN(5) // out of the class
	}
	parts = append(parts, fmt.Sprintf("filter parent 1:%x dst %d.%d.0.0/16 classid 1:%x", id, 10*rng.IntN(5), rng.IntN(5), to))
	if rng.IntN(10) != 0 {
		parts = append(parts, fmt.Sprintf("filter parent 1:%x classid 1:%x", id, kids[1]))
	}
	if levels > 1 && rng.IntN(3) == 0 {
		parts = append(parts, randomSplit(rng, kids[0], ceil/2+1, levels-1))
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

// TestHTBScriptChains: a script's filters join the root chain or, with
// parent, a class's chain, in the order given; String writes them back in
// the same words.
func TestHTBScriptChains(t *testing.T) {
	const text = "qdisc default 30; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 900mbit; " +
		"class parent 1:10 classid 1:11 rate 100mbit; class parent 1:10 classid 1:12 rate 100mbit; class parent 1:1 classid 1:30 rate 1mbit; " +
		"filter dst 10.0.0.0/8 classid 1:10; filter parent 1:10 dst 10.1.0.0/16 proto tcp dport 443 classid 1:11; " +
		"filter parent 1:10 classid 1:12; filter parent 1: dst 172.16.0.0/12 classid 1:30"
	s, err := htb.ParseScript(text)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Tree(classify.Egress)
	var root, chain []string
	for _, r := range cfg.Rules {
		root = append(root, r.String())
	}
	for _, r := range cfg.Chains[0x10010] {
		chain = append(chain, r.String())
	}
	if got, want := strings.Join(root, "; "), "dst 10.0.0.0/8 classid 1:10; dst 172.16.0.0/12 classid 1:30"; got != want {
		t.Errorf("root chain %q, want %q", got, want)
	}
	if got, want := strings.Join(chain, "; "), "dst 10.1.0.0/16 proto tcp dport 443 classid 1:11; classid 1:12"; got != want {
		t.Errorf("1:10's chain %q, want %q", got, want)
	}
	if len(cfg.Chains) != 1 {
		t.Errorf("chains of %d classes, want 1", len(cfg.Chains))
	}
	back, err := htb.ParseScript(s.String())
	if err != nil {
		t.Fatalf("htb.ParseScript(%q): %v", s.String(), err)
	}
	if back.String() != s.String() || !strings.Contains(s.String(), "filter parent 1:10 classid 1:12") {
		t.Errorf("round trip: %q, then %q", s.String(), back.String())
	}
	for _, tc := range []struct{ text, says string }{
		{text + "; filter parent 1:99 classid 1:11", "filters attached to 1:99, which is no class of the qdisc"},
		{text + "; filter parent 10 classid 1:11", `statement 11 (filter parent 10 classid 1:11): htb: parent "10"`},
		{strings.Replace(text, "filter parent 1:10 classid 1:12", "filter parent 1:10 dst 1.0.0.0/8 classid 1:1; filter parent 1:10 classid 1:12", 1) + "; filter parent 1:1 classid 1:10", "whose chain leads back here: a loop"},
		{text + "; filter parent 1:11 classid 1:10", ""}, // a leaf's filters never run: no loop
	} {
		_, err := htb.ParseScript(tc.text)
		if tc.says == "" {
			if err != nil {
				t.Errorf("htb.ParseScript(%q): %v", tc.text, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("htb.ParseScript(%q): %v; want an error saying %q", tc.text, err, tc.says)
		}
	}
}

// TestHTBDocSplit: the annotations docs/classes.md's "What a pod may ask"
// shows are accepted over the operator's script it shows there, and the
// split sends the pod's backups to their class and the rest of its
// internet traffic to the other.
func TestHTBDocSplit(t *testing.T) {
	const doc = "../docs/classes.md"
	b, err := os.ReadFile(doc)
	if os.IsNotExist(err) && os.Getenv("TEST_SRCDIR") != "" {
		t.Skipf("%s is not in Bazel's runfiles; go test checks it", doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start, end := strings.Index(text, "## What a pod may ask"), strings.Index(text, "## Running sandboxes")
	if start < 0 || end < start {
		t.Fatal(`docs/classes.md has no section "What a pod may ask" before "Running sandboxes"`)
	}
	section := text[start:end]
	op := regexp.MustCompile(`"qdisc-htb" = "([^"]*)"`).FindStringSubmatch(section)
	anns := regexp.MustCompile(`dev\.gvisor\.flag\.qdisc-htb: "([^"]*)"`).FindAllStringSubmatch(section, -1)
	if op == nil || len(anns) < 2 {
		t.Fatalf("the section shows %d annotations and operator script %q; want two and one", len(anns), op)
	}
	var c *Config
	for _, a := range anns {
		c, err = parse(t, "--qdisc=htb", "--qdisc-htb="+op[1])
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ApplyAnnotations(map[string]string{AnnotationPrefix + FlagHTB: a[1]}); err != nil {
			t.Errorf("annotation %q over %q: %v", a[1], op[1], err)
		}
	}
	// The last is the split.
	cfg, err := c.HTBConfig()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := htb.NewTree(cfg, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dst  string
		want uint32
	}{{"203.0.113.9", 0x10021}, {"198.51.100.1", 0x10022}, {"10.1.2.3", 0x10010}} {
		pkt := ipv4Packet(netip.MustParseAddr(tc.dst), 6, 443)
		if got := tr.ClassOf(pkt); got != tc.want {
			t.Errorf("a packet to %s goes to %s, want %s", tc.dst, classify.ClassID(got), classify.ClassID(tc.want))
		}
		pkt.DecRef()
	}
}

// ipv4Packet is an IPv4 packet to dst of protocol proto (a transport
// header of 20 bytes, to port dport), its network header at the start of
// its data, as a link hands a packet up.
func ipv4Packet(dst netip.Addr, proto uint8, dport uint16) *stack.PacketBuffer {
	b := make([]byte, 40)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8], b[9] = 64, proto
	copy(b[12:], []byte{192, 168, 0, 2})
	a := dst.As4()
	copy(b[16:], a[:])
	binary.BigEndian.PutUint16(b[20:], 40000)
	binary.BigEndian.PutUint16(b[22:], dport)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	return pkt
}
