package runscflags

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb/htbtest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// propertyTrees is how many accepted annotations TestHTBAnnotationSendsNoMore
// runs through the model: 1000 in the long run (qdisctest.Long, which
// .ci/run's long step sets), 32 by default.
func propertyTrees() int {
	if qdisctest.Long() {
		return 1000
	}
	return 32
}

// propertySets is how many accepted sets TestAnnotationSendsNoMore runs:
// 250 in the long run, 8 by default.
func propertySets() int {
	if qdisctest.Long() {
		return 250
	}
	return 8
}

// TestHTBAnnotationSendsNoMore is only-tighten measured in bytes: for
// random operator trees and random annotations the policy accepts (leaves
// split into up to eight children, nested splits, classes lowered), every
// leaf kept backlogged through the sch_htb model for 10 s simulated, each
// of the operator's classes sends, with everything under it, no more
// bytes after the annotation than before. 1000 annotations in the long
// run, 32 by default (propertyTrees).
func TestHTBAnnotationSendsNoMore(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	rng := rand.New(rand.NewPCG(36, 1))
	want := propertyTrees()
	const dur = int64(10 * time.Second)
	// Slack, in packets: two for the window (htb sends a packet while a
	// bucket's tokens are not negative and charges it after, so a bucket
	// is up to a packet ahead of its rate, and the window's end cuts a
	// packet either side), and one for each class the pod adds (a bucket
	// starts full: each new class's first packet passes however small
	// its share of the bucket).
	const pkt = 1514
	accepted, tried, split := 0, 0, 0
	worst := 0.0
	for accepted < want {
		tried++
		if tried > 50*want {
			t.Fatalf("only %d of %d random annotations accepted: the generator no longer fits the policy", accepted, tried)
		}
		op := kbitTree(rng)
		c, err := parse(t, "--qdisc=htb", "--qdisc-htb="+op)
		if err != nil {
			t.Fatalf("operator tree %q: %v", op, err)
		}
		opScript, err := htb.ParseScript(op)
		if err != nil {
			t.Fatal(err)
		}
		ann := kbitAnnotation(rng, opScript)
		if c.ApplyAnnotations(map[string]string{AnnotationPrefix + FlagHTB: ann}) != nil {
			continue
		}
		accepted++
		if strings.Contains(ann, "filter parent") {
			split++
		}
		after, err := htb.ParseScript(c.HTB)
		if err != nil {
			t.Fatal(err)
		}
		// The pod's classes carry the packets of the operator's class
		// they split: its packets' size.
		sizeOf := packetSizes(rng)
		size := func(id uint32) uint32 {
			for classIndex(opScript.Classes, id) < 0 {
				id = after.Classes[classIndex(after.Classes, id)].Parent
			}
			return sizeOf(id)
		}
		all := func(uint32) bool { return true }
		now := saturated(t, after.Tree(classify.Egress), size, dur, all)
		opKids, kids := childCount(opScript.Classes), childCount(after.Classes)
		for _, o := range opScript.Classes {
			a := subtreeBytes(after.Classes, now, o.ID)
			slack := uint64(2 * pkt)
			for _, n := range after.Classes {
				if classIndex(opScript.Classes, n.ID) < 0 && under(after.Classes, n.ID, o.ID) {
					slack += pkt
				}
			}
			// A class the annotation splits, under the same load, sends
			// no more than it would unsplit, the rest of the tree as the
			// annotation left it. (Against the operator's tree it may
			// send more: the pod's lower prios and rates elsewhere leave
			// it more of the excess.)
			if opKids[o.ID] == 0 && kids[o.ID] > 0 {
				whole := after
				whole.Classes = slices.DeleteFunc(slices.Clone(after.Classes), func(c htb.ClassConfig) bool { return under(after.Classes, c.ID, o.ID) })
				unsplit := saturated(t, whole.Tree(classify.Egress), size, dur, all)
				if b := unsplit[o.ID]; a > b {
					worst = max(worst, float64(a-b)/float64(b))
				}
				if b := unsplit[o.ID]; a > b+slack+b/20 {
					t.Fatalf("operator %q\nannotation %q\naccepted as %q\nclass %s sent %d bytes in 10 s with the classes under it, %d unsplit (+%d)",
						op, ann, c.HTB, classify.ClassID(o.ID), a, b, a-b)
				}
			}
			// The most the operator's tree lets o send: o's leaves alone
			// busy.
			alone := saturated(t, opScript.Tree(classify.Egress), size, dur, func(l uint32) bool { return l == o.ID || under(opScript.Classes, l, o.ID) })
			if most := subtreeBytes(opScript.Classes, alone, o.ID); a > most+slack {
				t.Fatalf("operator %q\nannotation %q\naccepted as %q\nclass %s sent %d bytes in 10 s with everything under it, above the %d it sends alone under the operator's tree (+%d)",
					op, ann, c.HTB, classify.ClassID(o.ID), a, most, a-most)
			}
		}
	}
	t.Logf("%d of %d random annotations accepted (%d splitting a class), each held in 10 s of saturating load; a split class sent at most %.4f more than unsplit", accepted, tried, split, worst)
	if split < accepted/2 {
		t.Errorf("only %d of %d accepted annotations split a class: the property is barely exercised", split, accepted)
	}
}

// saturated runs cfg through the sch_htb model (htbtest) for dur ns from
// 0 with every busy leaf kept backlogged (packets of size(leaf) bytes),
// the others idle, and returns the bytes each leaf sent.
func saturated(t *testing.T, cfg htb.Config, size func(uint32) uint32, dur int64, busy func(uint32) bool) map[uint32]uint64 {
	t.Helper()
	bytes, err := htbtest.Saturate(cfg, size, dur, busy)
	if err != nil {
		t.Fatalf("%+v: %v", cfg, err)
	}
	return bytes
}

// subtreeBytes adds up what the leaves of classes at or under id sent.
func subtreeBytes(classes []htb.ClassConfig, sent map[uint32]uint64, id uint32) uint64 {
	var n uint64
	for _, c := range classes {
		if c.ID == id || under(classes, c.ID, id) {
			n += sent[c.ID]
		}
	}
	return n
}

// packetSizes is a random choice of packet sizes for a run: full-size
// frames everywhere, one size for all, or a size per leaf.
func packetSizes(rng *rand.Rand) func(uint32) uint32 {
	switch rng.IntN(3) {
	case 0:
		return func(uint32) uint32 { return 1514 }
	case 1:
		s := uint32(64 + rng.IntN(1451))
		return func(uint32) uint32 { return s }
	}
	seed := rng.Uint32()
	return func(id uint32) uint32 { return 64 + (id*2654435761^seed)%1451 }
}

// kbitTree is a random operator tree at rates the model runs through
// 10 s quickly (a root of 1 to 4 Mbit/s): two to four classes 1:10...
// under the root (rates, ceils, prios, now and then a burst or a quantum
// of their own), some inner with two leaves and a chain, a small class
// 1:f0, filters by destination, and a default.
func kbitTree(rng *rand.Rand) string {
	var b strings.Builder
	root := 1000 + rng.IntN(3000)
	n := 2 + rng.IntN(3)
	def := []int{0x10 + rng.IntN(n), 0xf0}[rng.IntN(2)]
	fmt.Fprintf(&b, "qdisc default %x; class root classid 1:1 rate %dkbit", def, root)
	for i := range n {
		id := 0x10 + i
		r := 50 + rng.IntN(root/2)
		fmt.Fprintf(&b, "; class parent 1:1 classid 1:%x rate %dkbit ceil %dkbit prio %d", id, r, r+rng.IntN(root-r+1), rng.IntN(3))
		if rng.IntN(4) == 0 {
			fmt.Fprintf(&b, " quantum %d", 1000+rng.IntN(20000))
		}
		if rng.IntN(4) == 0 {
			fmt.Fprintf(&b, " burst %d cburst %d", 1600+rng.IntN(20000), 1600+rng.IntN(20000))
		}
		if id != def && rng.IntN(4) == 0 {
			for j := 1; j <= 2; j++ {
				fmt.Fprintf(&b, "; class parent 1:%x classid 1:%x rate %dkbit ceil %dkbit", id, id*16+j, 20+rng.IntN(r/2+1), r)
			}
			fmt.Fprintf(&b, "; filter parent 1:%x dst 10.%d.0.0/16 classid 1:%x; filter parent 1:%x classid 1:%x", id, i, id*16+1, id, id*16+2)
		}
		fmt.Fprintf(&b, "; filter dst %d.0.0.0/8 classid 1:%x", 20+i, id)
	}
	fmt.Fprintf(&b, "; class parent 1:1 classid 1:f0 rate 50kbit ceil %dkbit", root/4)
	return b.String()
}

// kbitAnnotation is a random annotation for op: one or two of its leaves
// (not the default) split into two to eight children with a chain (rates
// that fit the leaf's or not, ceils up to its ceil or above, prios at or
// after its, now and then a burst or quantum given), now and then a
// child split again; now and then a class of op's lowered.
func kbitAnnotation(rng *rand.Rand, op script) string {
	var parts []string
	kids := childCount(op.Classes)
	var leaves []htb.ClassConfig
	for _, c := range op.Classes {
		if kids[c.ID] == 0 && c.ID != op.Qdisc.Default {
			leaves = append(leaves, c)
		}
	}
	for range 1 + rng.IntN(2) {
		c := op.Classes[1+rng.IntN(len(op.Classes)-1)]
		if rng.IntN(4) != 0 {
			c = leaves[rng.IntN(len(leaves))]
		}
		if rng.IntN(6) == 0 {
			parts = append(parts, fmt.Sprintf("class classid %s rate %dkbit", classify.ClassID(c.ID), max(c.Rate*8/1000*uint64(1+rng.IntN(4))/4, 1)))
			continue
		}
		parts = append(parts, kbitSplit(rng, effective(c), c.ID, 2))
	}
	return strings.Join(parts, "; ")
}

// kbitSplit splits class p (id) into children 1:id*16+j, the last by a
// catch-all, levels deep at most: three times in four with rates that fit
// p's and one borrower at most, else at random.
func kbitSplit(rng *rand.Rand, p htb.ClassConfig, id uint32, levels int) string {
	var parts []string
	k := 2 + rng.IntN(7)
	if (id&0xffff)*16+uint32(k) > 0xffff {
		return fmt.Sprintf("class classid %s ceil %dkbit", classify.ClassID(id), p.Ceil*8/1000)
	}
	fits := rng.IntN(4) != 0
	borrower := 1 + rng.IntN(k+1) // k+1: none
	var first htb.ClassConfig
	for j := 1; j <= k; j++ {
		kid := htb.ClassConfig{ID: 1<<16 | (id&0xffff)*16 + uint32(j), Parent: id, Prio: p.Prio + uint8(rng.IntN(3))}
		if fits {
			kid.Rate = max(p.Rate*uint64(1+rng.IntN(4))/uint64(4*k), 125)
		} else {
			kid.Rate = 125 + uint64(rng.IntN(int(p.Rate)))
		}
		kid.Ceil = kid.Rate
		if j == borrower || !fits {
			kid.Ceil += uint64(rng.IntN(int(p.Ceil - min(kid.Rate, p.Ceil) + 1)))
		}
		if rng.IntN(10) == 0 {
			kid.Ceil = p.Ceil * 2
		}
		w := fmt.Sprintf("class parent %s classid %s rate %dbps ceil %dbps prio %d", classify.ClassID(id), classify.ClassID(kid.ID), kid.Rate, kid.Ceil, kid.Prio)
		if rng.IntN(5) == 0 {
			w += fmt.Sprintf(" quantum %d", 500+rng.IntN(3000))
		}
		if rng.IntN(5) == 0 {
			w += fmt.Sprintf(" burst %d", 200+rng.IntN(3000))
		}
		parts = append(parts, w)
		if j < k {
			parts = append(parts, fmt.Sprintf("filter parent %s dst 10.%d.%d.0/24 classid %s", classify.ClassID(id), id&0xff, j, classify.ClassID(kid.ID)))
		} else {
			parts = append(parts, fmt.Sprintf("filter parent %s classid %s", classify.ClassID(id), classify.ClassID(kid.ID)))
		}
		if j == 1 {
			first = kid
		}
	}
	if levels > 1 && rng.IntN(3) == 0 {
		parts = append(parts, kbitSplit(rng, effective(first), first.ID, levels-1))
	}
	return strings.Join(parts, "; ")
}
