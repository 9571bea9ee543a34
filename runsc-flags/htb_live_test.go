package runscflags_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

const liveHTB = "qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 990mbit ceil 1gbit; " +
	"class parent 1:1 classid 1:20 rate 10mbit quota 3000b per 24h then block; filter dst 10.0.0.0/8 classid 1:10"

// TestChangeClasses changes a running htb's classes as `runsc qdisc
// change` does: a class's rate in place (the operator may raise it), a
// quota reset, and what a change cannot do (add a class, touch the
// filters) refused, changing nothing.
func TestChangeClasses(t *testing.T) {
	p := newLiveNIC(t, "eth0", 1500, map[string]string{"qdisc": "htb", "qdisc-htb": liveHTB, "qdisc-ingress-htb": liveHTB})
	q := p.q.(*htb.Discipline)
	// Three 1000-byte packets spend the default class's 3000-byte quota.
	for i := range 4 {
		pkt := qdisctest.MakePacket(1000, 0, uint64(i))
		if err := q.WritePacket(pkt); err != nil {
			t.Fatal(err)
		}
		pkt.DecRef()
		qdisctest.WaitQuiescent(t, q)
		p.clock.Advance(time.Millisecond)
	}
	if n := len(p.link.Records()); n != 3 {
		t.Fatalf("%d packets sent, want the quota's 3", n)
	}
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{"--qdisc-htb=class classid 1:20 rate 20mbit; reset classid 1:20"}); err != nil {
		t.Fatal(err)
	}
	qdisctest.WaitQuiescent(t, q)
	p.clock.Advance(time.Millisecond)
	qdisctest.WaitQuiescent(t, q)
	if n := len(p.link.Records()); n != 4 {
		t.Errorf("%d packets sent after the quota's reset, want 4", n)
	}
	cls := q.Classes()
	if cls[2].Rate != 2_500_000 || cls[2].QuotaUsed != 1000 {
		t.Errorf("class 1:20 after the change: rate %d, quota used %d; want 2500000 and 1000", cls[2].Rate, cls[2].QuotaUsed)
	}
	if !strings.Contains(p.NIC.Config().HTB, "rate 20Mbit") {
		t.Errorf("the Config in force does not carry the change: %q", p.NIC.Config().HTB)
	}
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{"--qdisc-ingress-htb=class classid 1:10 ceil 500mbit"}); err != nil {
		t.Fatal(err)
	}
	if c := p.in.Whole().(*htb.Discipline).Classes()[1]; c.Ceil != 62_500_000 {
		t.Errorf("ingress class 1:10's ceil is %d after the change, want 62500000", c.Ceil)
	}
	before := p.NIC.Config()
	for _, bad := range []struct{ arg, says string }{
		{"--qdisc-htb=class parent 1:1 classid 1:30 rate 1mbit", "no class 1:30"},
		{"--qdisc-htb=filter dst 0.0.0.0/0 classid 1:10", "the filters' words"},
		{"--qdisc-htb=reset classid 1:10", "has no quota"},
	} {
		_, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{bad.arg})
		if err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("Change(%q): %v; want an error saying %q", bad.arg, err, bad.says)
		}
	}
	if after := p.NIC.Config(); after.HTB != before.HTB {
		t.Errorf("a refused change changed the Config: %q", after.HTB)
	}
	if show := p.NIC.Show(); !strings.Contains(show, "class htb 1:20 parent 1:1") || !strings.Contains(show, "quota") {
		t.Errorf("Show does not list the classes as tc -s class show does:\n%s", show)
	}
}

// TestCheckpointState: a checkpoint keeps a NIC's class changes and its
// quotas' counters, and a NIC built from the same flags takes them back: a
// restore neither undoes a `runsc qdisc change` that tightened nor renews
// a budget. One that raised a class is the sandbox's word against the
// restoring host's flags, and is refused (TestRestoreHeldToPolicy).
func TestCheckpointState(t *testing.T) {
	flags := map[string]string{"qdisc": "htb", "qdisc-htb": liveHTB}
	p := newLiveNIC(t, "eth0", 1500, flags)
	q := p.q.(*htb.Discipline)
	for i := range 2 {
		pkt := qdisctest.MakePacket(1000, 0, uint64(i))
		if err := q.WritePacket(pkt); err != nil {
			t.Fatal(err)
		}
		pkt.DecRef()
		qdisctest.WaitQuiescent(t, q)
	}
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{"--qdisc-htb=class classid 1:20 rate 5mbit"}); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.NIC.State(true))
	if err != nil {
		t.Fatal(err)
	}
	var saved runscflags.NICState
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	restored := newLiveNIC(t, "eth0", 1500, flags)
	if err := restored.NIC.Restore(saved); err != nil {
		t.Fatalf("Restore(%s): %v", b, err)
	}
	got := restored.q.(*htb.Discipline).Classes()[2]
	if got.Rate != 625_000 || got.QuotaUsed != 2000 {
		t.Errorf("restored class 1:20: rate %d, quota used %d; want the change's 625000 and the 2000 bytes used before the checkpoint (saved %s)", got.Rate, got.QuotaUsed, b)
	}
	if s := restored.NIC.State(false); len(s.Args) != 0 || len(quotasIn(t, s.Egress)) != 1 {
		t.Errorf("State(false) = %+v; want no args and the one quota", s)
	}
}

// TestHTBKind: htb is a registered kind too: KindOf gives it, with the
// script as its options, in each direction; the NIC's Samples are its
// classes' counters (member "1:10"); a checkpoint keeps its quotas by
// htb's Save in each direction, and a checkpoint that kept them in
// EgressQuotas and IngressQuotas, as before htb was a kind, still
// restores them; and
// --qdisc-ingress=htb names what --qdisc-ingress-htb shapes.
func TestHTBKind(t *testing.T) {
	flags := map[string]string{"qdisc": "htb", "qdisc-htb": liveHTB, "qdisc-ingress-htb": liveHTB}
	p := newLiveNIC(t, "eth0", 1500, flags)
	cfg := p.NIC.Config()
	for _, d := range []runscflags.Ceiling{runscflags.EgressCeiling, runscflags.IngressCeiling} {
		k, o, ok := cfg.KindOf(d)
		if !ok || k.Name != "htb" || o.String() != cfg.HTB || cfg.HTB != cfg.IngressHTB {
			t.Errorf("KindOf(%v) = %s %v, %v; want htb with the script %q", d, k.Name, o, ok, cfg.HTB)
		}
	}
	pkt := qdisctest.MakePacket(1000, 0, 0)
	if err := p.q.(*htb.Discipline).WritePacket(pkt); err != nil {
		t.Fatal(err)
	}
	pkt.DecRef()
	qdisctest.WaitQuiescent(t, p.q.(*htb.Discipline))
	egress, ingress := p.NIC.Samples()
	if egress.Kind != "htb" || ingress.Kind != "htb" {
		t.Fatalf("Samples: %+v, %+v; want htb's in both directions", egress, ingress)
	}
	sent := map[string]uint64{}
	for _, s := range egress.Samples {
		if s.Metric == "sent_bytes" {
			sent[s.Member] = s.Value
		}
	}
	if len(sent) != 3 || sent["1:20"] != 1000 || sent["1:1"] != 1000 || sent["1:10"] != 0 {
		t.Errorf("sent_bytes by class %v; want 1000 in 1:1 and 1:20 (the default class), 0 in 1:10", sent)
	}
	s := p.NIC.State(false)
	if len(quotasIn(t, s.Egress)) != 1 || len(quotasIn(t, s.Ingress)) != 1 || s.EgressQuotas != nil || s.IngressQuotas != nil {
		t.Errorf("State = %+v; want one quota in each direction's state, none in the old fields", s)
	}
	old := runscflags.NICState{EgressQuotas: quotasIn(t, s.Egress), IngressQuotas: quotasIn(t, s.Ingress)}
	old.EgressQuotas[0].Used, old.IngressQuotas[0].Used = 700, 300
	restored := newLiveNIC(t, "eth0", 1500, flags)
	if err := restored.NIC.Restore(old); err != nil {
		t.Fatalf("Restore of an older checkpoint: %v", err)
	}
	if got := restored.NIC.State(false); quotasIn(t, got.Egress)[0].Used != 700 || quotasIn(t, got.Ingress)[0].Used != 300 {
		t.Errorf("after restoring quotas used 700 and 300 from the old fields, State = %+v", got)
	}
	flags["qdisc-ingress"] = "htb"
	if err := configOf(t, flags).Validate(); err != nil {
		t.Errorf("--qdisc-ingress=htb with --qdisc-ingress-htb: %v", err)
	}
}

// quotasIn decodes htb's Save of a direction (its quotas' counters).
func quotasIn(t *testing.T, state []byte) []htb.QuotaState {
	t.Helper()
	if state == nil {
		return nil
	}
	var q []htb.QuotaState
	if err := json.Unmarshal(state, &q); err != nil {
		t.Fatalf("htb's state %q: %v", state, err)
	}
	return q
}
