package runscflags_test

import (
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// netemLeafHTB is an htb tree whose default class 1:20 (the internet's)
// has netem's delay as its leaf, and 1:10 (the cluster's, 10.0.0.0/8)
// none.
const netemLeafHTB = "qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 990mbit ceil 1gbit; " +
	"class parent 1:1 classid 1:20 rate 10mbit; filter dst 10.0.0.0/8 classid 1:10; qdisc parent 1:20 netem delay 100ms"

// TestHTBNetemLeaf: --qdisc=htb with "qdisc parent 1:20 netem delay
// 100ms" builds, `runsc qdisc show` lays the leaf out as tc does (its own
// line under its class with its handle and tc -s counters, the class
// naming it), and class 1:20's packets leave 100 ms after they came, on
// a manual clock, not before and not a second late.
func TestHTBNetemLeaf(t *testing.T) {
	p := newLiveNIC(t, "eth0", 1500, map[string]string{"qdisc": "htb", "qdisc-htb": netemLeafHTB})
	show := p.NIC.Show()
	for _, want := range []string{
		"qdisc htb 1: dev eth0 root refcnt 2 r2q 10 default 0x20",
		"qdisc netem 8001: dev eth0 parent 1:20 limit 1000 delay 100ms",
		"class htb 1:20 parent 1:1 leaf 8001: prio 0 rate 10Mbit",
		"class htb 1:10 parent 1:1 prio 0 rate 990Mbit",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("runsc qdisc show:\n%s\nwant %q", show, want)
		}
	}
	if i := strings.Index(show, "qdisc netem 8001:"); i < 0 || !strings.Contains(show[i:], "\n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)") {
		t.Errorf("the netem leaf has no tc -s counters under it:\n%s", show)
	}
	q := p.q.(*htb.Discipline)
	pkt := qdisctest.MakePacket(1000, 0, 1) // to no 10/8 address: class 1:20
	if err := q.WritePacket(pkt); err != nil {
		t.Fatal(err)
	}
	pkt.DecRef()
	for _, step := range []struct {
		advance time.Duration
		sent    int
	}{
		{0, 0},
		{99 * time.Millisecond, 0},
		{time.Millisecond, 1}, // 100 ms after it came
	} {
		p.clock.Advance(step.advance)
		qdisctest.WaitQuiescent(t, q)
		if n := len(p.link.Records()); n != step.sent {
			t.Fatalf("after %v more: %d packets sent, want %d", step.advance, n, step.sent)
		}
	}
	if c := q.Classes()[2]; c.ID != 0x10020 || c.Packets != 1 {
		t.Errorf("class %x sent %d packets, want 1:20 and 1", c.ID, c.Packets)
	}
}

// TestHTBNetemLeafPod: a pod's annotation of --qdisc-htb cannot graft a
// leaf's qdisc (netem or another), nor change the operator's: its words
// are refused unread (a pod's netem words never open a host file), and
// its classes may still be tightened under the operator's netem leaf.
func TestHTBNetemLeafPod(t *testing.T) {
	for _, tc := range []struct {
		name, value, says string // says "" for taken
	}{
		{"a class lowered", "class classid 1:20 rate 5mbit", ""},
		{"a netem leaf of its own", "qdisc parent 1:10 netem delay 1ms", "a leaf's qdisc (qdisc parent 1:20 netem ...) is the operator's, in --qdisc-htb: a change or a pod's annotation gives class and filter statements"},
		{"the operator's words changed", "qdisc parent 1:20 netem delay 1ms", "a leaf's qdisc (qdisc parent 1:20 netem ...) is the operator's"},
		{"a host file", "qdisc parent 1:10 netem delay 1ms 1ms distribution /etc/passwd", "is the operator's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := configOf(t, map[string]string{"qdisc": "htb", "qdisc-htb": netemLeafHTB})
			before := c.HTB
			err := c.ApplyAnnotations(map[string]string{runscflags.AnnotationPrefix + runscflags.FlagHTB: tc.value})
			if tc.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(c.HTB, "qdisc parent 1:20 netem delay") {
					t.Errorf("the operator's netem leaf is gone: %q", c.HTB)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("ApplyAnnotations(%q): %v; want an error saying %q", tc.value, err, tc.says)
			}
			if c.HTB != before {
				t.Errorf("a refused annotation changed --qdisc-htb to %q", c.HTB)
			}
		})
	}
}
