package htb

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// kindScripts are the scripts the doc comments show (Script's, Kind's
// Example, runsc's --qdisc-htb help) and some with every kind of statement
// and word: each parses, and its String reads back to it.
var kindScripts = []string{
	"qdisc default 20; class root classid 1:1 rate 1gbit;\nclass parent 1:1 classid 1:10 rate 900mbit;\nclass parent 1:10 classid 1:11 rate 100mbit;\nclass parent 1:1 classid 1:20 rate 10mbit quota 50gb per 24h;\nfilter dst 10.0.0.0/8 classid 1:10;\nfilter parent 1:10 dst 10.1.0.0/16 classid 1:11",
	Kind.Example,
	"qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:20 rate 10mbit; filter dst 10.0.0.0/8 classid 1:10; qdisc parent 1:20 fq_codel",
	"qdisc handle 2: default 30 r2q 5 direct_qlen 100; class parent 2: classid 2:1 rate 100mbit ceil 200mbit burst 15k cburst 30k prio 1 quantum 1514 overhead 4 mpu 64; class parent 2:1 classid 2:30 rate 1mbit quota 1gb per 30d then 128kbit",
	"class root classid 1:1 rate 10mbit",
	"qdisc default 12\nclass root classid 1:1 rate 1gbit\nclass parent 1:1 classid 1:10 rate 900mbit\nclass parent 1:10 classid 1:11 rate 100mbit\nclass parent 1:10 classid 1:12 rate 100mbit\nfilter dst 10.0.0.0/8 classid 1:10\nfilter parent 1:10 proto tcp dport 443 classid 1:11\nfilter parent 1:10 classid 1:12\nqdisc parent 1:11 fq_codel\nqdisc parent 1:12 fq_codel",
}

// TestKindParseRoundTrip: Kind.Parse is ParseScript, its Options are the
// Script, and their String is words Kind.Parse reads back to the same
// Script, which String writes the same; an error is ParseScript's.
func TestKindParseRoundTrip(t *testing.T) {
	for _, text := range kindScripts {
		o, err := Kind.Parse(text)
		if err != nil {
			t.Errorf("Kind.Parse(%q): %v", text, err)
			continue
		}
		s, err := ParseScript(text)
		if err != nil || !reflect.DeepEqual(o, qdisc.Options(s)) {
			t.Errorf("Kind.Parse(%q) = %#v; want ParseScript's %#v, %v", text, o, s, err)
		}
		back, err := Kind.Parse(o.String())
		if err != nil {
			t.Errorf("Kind.Parse(%q), of %q's String: %v", o.String(), text, err)
			continue
		}
		if !reflect.DeepEqual(back, o) || back.String() != o.String() {
			t.Errorf("%q: String %q reads back to %#v (%q); want %#v", text, o.String(), back, back.String(), o)
		}
	}
	for _, text := range []string{"", "class root classid 1:1", "qdisc parent 1:1 sfq; class root classid 1:1 rate 1mbit", "filter classid 1:1"} {
		o, err := Kind.Parse(text)
		_, want := ParseScript(text)
		if err == nil || o != nil || want == nil || err.Error() != want.Error() {
			t.Errorf("Kind.Parse(%q) = %v, %v; want ParseScript's error %v", text, o, err, want)
		}
	}
}

// TestKindRegistered: htb is in the registry with what Register requires
// (a second Register of its name panics), a Tighten (Script.Tighten) and
// no Fit, and a metric per class counter, each a "class" member's.
func TestKindRegistered(t *testing.T) {
	k, ok := qdisc.Lookup("htb")
	if !ok || k.Name != "htb" || k.Parse == nil || k.New == nil || k.NewTo == nil || k.Change == nil {
		t.Fatalf("Lookup(htb) = %+v, %v; want htb's Kind", k, ok)
	}
	if k.Tighten == nil || k.Fit != nil {
		t.Error("htb's Kind has no Tighten, or has a Fit; want a Tighten and no Fit")
	}
	if k.Save == nil || k.Restore == nil || k.Samples == nil || k.Members == nil {
		t.Error("htb's Kind lacks Save, Restore, Samples or Members")
	}
	var names []string
	for _, m := range k.Metrics {
		names = append(names, m.Name)
		if m.Member != "class" || m.Help == "" || m.Path("htb") != "class/"+m.Name {
			t.Errorf("metric %+v: want a class's, with help, at class/%s", m, m.Name)
		}
		if cum := m.Name != "backlog_bytes" && m.Name != "quota_used_bytes"; m.Cumulative != cum {
			t.Errorf("metric %s: cumulative %v; want %v", m.Name, m.Cumulative, cum)
		}
	}
	for _, want := range []string{"sent_bytes", "sent_packets", "dropped_packets", "overlimits", "backlog_bytes", "quota_used_bytes", "lended_packets", "borrowed_packets"} {
		if !slices.Contains(names, want) {
			t.Errorf("metrics %v: no %s", names, want)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "registered twice") {
			t.Errorf("a second Register(htb): %v; want a panic saying it is registered twice", r)
		}
	}()
	qdisc.Register(Kind)
}

// twoClasses is a script of two leaves: the peers 10.0.0.0/8 and
// 192.168.0.0/16 (a rule's dst is the peer: on the receive path, the
// packet's source) in 1:10, 1 Mbit/s, with fq_codel, and the rest in
// 1:20, 100 Mbit/s.
const twoClasses = "qdisc default 20; class root classid 1:1 rate 101mbit; class parent 1:1 classid 1:10 rate 1mbit; class parent 1:1 classid 1:20 rate 100mbit; filter dst 10.0.0.0/8 classid 1:10; filter dst 192.168.0.0/16 classid 1:10; qdisc parent 1:10 fq_codel"

// kindOf returns twoClasses (or text) as the Kind's options.
func kindOf(t *testing.T, text string) qdisc.Options {
	t.Helper()
	o, err := Kind.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestKindNewSends: Kind.New builds htb on the send path, its filters
// matching destinations, the leaf the script grafts fq_codel on with
// fq_codel (made for the link's frames) and the others their pfifo; what
// it is written leaves, 1:10's at its rate, on the clock given.
func TestKindNewSends(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	q, err := Kind.New(link, clock, kindOf(t, twoClasses))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	d := q.(*Discipline)
	if cs := d.Classes(); !strings.HasPrefix(cs[1].Leaf, "fq_codel") || cs[2].Leaf != "pfifo" {
		t.Errorf("leaves %q and %q; want fq_codel on 1:10 and pfifo on 1:20", cs[1].Leaf, cs[2].Leaf)
	}
	if d.tree.cfg.Direction != classify.Egress {
		t.Errorf("direction %v; want egress", d.tree.cfg.Direction)
	}
	var pkts []*stack.PacketBuffer
	for i := range 10 {
		dst := netip.AddrFrom4([4]byte{10, 0, 0, 1})
		if i%2 == 1 {
			dst = netip.AddrFrom4([4]byte{8, 8, 8, 8})
		}
		pkt := ipv4PacketOf(dst, 1000)
		pkts = append(pkts, pkt)
		if err := q.WritePacket(pkt); err != nil {
			t.Fatalf("WritePacket: %v", err)
		}
	}
	qdisctest.WaitQuiescent(t, q)
	clock.Advance(time.Millisecond)
	qdisctest.WaitQuiescent(t, q)
	// 1:20's five leave within 400 µs; 1:10's burst (1600 bytes) lets two
	// (the second while its tokens are not yet below 0), then one each 8 ms.
	if n := len(link.Records()); n != 7 {
		t.Errorf("%d packets left in a millisecond; want 7 (1:20's five, two of 1:10's)", n)
	}
	clock.Advance(time.Second) // 1:10's 1 Mbit/s sends the other three
	qdisctest.WaitQuiescent(t, q)
	if n := len(link.Records()); n != 10 {
		t.Errorf("%d packets left after a second; want all 10", n)
	}
	q.Close()
	qdisctest.CheckReleased(t, pkts)
	if _, err := Kind.New(nil, clock, kindOf(t, twoClasses)); err == nil {
		t.Error("Kind.New with no link: nil error")
	}
}

// TestKindNewToDelivers: Kind.NewTo builds htb on the receive path, its
// filters matching sources, and delivers what it is given to out.
func TestKindNewToDelivers(t *testing.T) {
	clock := faketime.NewManualClock()
	out := qdisctest.NewLink(clock)
	q, err := Kind.NewTo(out, qdisctest.NewLink(clock), clock, kindOf(t, twoClasses))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	d := q.(*Discipline)
	if d.tree.cfg.Direction != classify.Ingress {
		t.Errorf("direction %v; want ingress", d.tree.cfg.Direction)
	}
	var pkts []*stack.PacketBuffer
	for range 4 {
		pkt := ipv4PacketOf(netip.AddrFrom4([4]byte{10, 0, 0, 1}), 1000) // from 192.168.0.2
		pkts = append(pkts, pkt)
		if err := q.Enqueue(pkt, 0); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	qdisctest.WaitQuiescent(t, q)
	clock.Advance(time.Second)
	qdisctest.WaitQuiescent(t, q)
	if n := len(out.Records()); n != 4 {
		t.Errorf("%d packets delivered; want 4", n)
	}
	for _, c := range d.Classes() {
		if want := uint64(4 * (c.ID & 0x10 >> 4)); c.ID != 0x10001 && c.Packets != want {
			t.Errorf("class %s sent %d packets; want %d (received from 192.168.0.0/16: 1:10's)", classify.ClassID(c.ID), c.Packets, want)
		}
	}
	q.Close()
	qdisctest.CheckReleased(t, pkts)
}

// TestKindSamples: Samples are every class's counters as ClassStats has
// them, after traffic that fills a class's queue, borrows and spends a
// quota; Members names the same classes, from the options alone.
func TestKindSamples(t *testing.T) {
	const text = "qdisc default 20; class root classid 1:1 rate 2mbit ceil 2mbit quota 100kb per 1h then 1mbit; class parent 1:1 classid 1:10 rate 1mbit ceil 2mbit; class parent 1:1 classid 1:20 rate 100kbit; filter dst 10.0.0.0/8 classid 1:10"
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	o := kindOf(t, text)
	q, err := Kind.New(link, clock, o)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var pkts []*stack.PacketBuffer
	for i := range 40 {
		dst := netip.AddrFrom4([4]byte{10, 0, 0, 1})
		if i%4 == 3 {
			dst = netip.AddrFrom4([4]byte{8, 8, 8, 8})
		}
		pkt := ipv4PacketOf(dst, 1500)
		pkts = append(pkts, pkt)
		q.WritePacket(pkt)
	}
	for range 10 {
		clock.Advance(10 * time.Millisecond)
		qdisctest.WaitQuiescent(t, q)
	}
	classes := q.(*Discipline).Classes()
	samples := Kind.Samples(q)
	got := map[[2]string]uint64{}
	for _, s := range samples {
		got[[2]string{s.Metric, s.Member}] = s.Value
	}
	if len(got) != len(samples) || len(samples) != len(classes)*len(Kind.Metrics) {
		t.Errorf("%d samples (%d distinct); want one per class and metric, %d", len(samples), len(got), len(classes)*len(Kind.Metrics))
	}
	var lent, borrowed, backlog, quota uint64
	for _, c := range classes {
		id := classify.ClassID(c.ID)
		for m, want := range map[string]uint64{
			"sent_bytes": c.Bytes, "sent_packets": c.Packets, "dropped_packets": c.Drops, "overlimits": c.Overlimits,
			"lended_packets": c.Lends, "borrowed_packets": c.Borrows, "backlog_bytes": c.BacklogBytes, "quota_used_bytes": c.QuotaUsed,
		} {
			if v, ok := got[[2]string{m, id}]; !ok || v != want {
				t.Errorf("class %s: %s = %d, %v; want ClassStats' %d", id, m, v, ok, want)
			}
		}
		lent += c.Lends
		borrowed += c.Borrows
		backlog += c.BacklogBytes
		quota += c.QuotaUsed
	}
	if lent == 0 || borrowed == 0 || backlog == 0 || quota == 0 {
		t.Errorf("lent %d, borrowed %d, backlog %d, quota used %d: the traffic left a counter at 0:\n%s", lent, borrowed, backlog, quota, q.(*Discipline).TCStats())
	}
	if members, want := Kind.Members(o), []string{"1:1", "1:10", "1:20"}; !slices.Equal(members, want) {
		t.Errorf("Members = %v; want %v", members, want)
	}
	q.Close()
	qdisctest.CheckReleased(t, pkts)
}

// TestKindChange: Change sets the classes' settings in place (a class
// given as it was is left alone), and refuses what a running tree keeps:
// its classes (none added or removed), its qdisc's words, its filters and
// its leaves' qdiscs.
func TestKindChange(t *testing.T) {
	clock := faketime.NewManualClock()
	q, err := Kind.New(qdisctest.NewLink(clock), clock, kindOf(t, twoClasses))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	d := q.(*Discipline)
	changed := strings.Replace(twoClasses, "classid 1:20 rate 100mbit", "classid 1:20 rate 50mbit ceil 101mbit prio 2", 1)
	if err := Kind.Change(q, kindOf(t, changed)); err != nil {
		t.Fatalf("Change to %q: %v", changed, err)
	}
	if c := d.Classes()[2]; c.Rate != 50*125_000 || c.Ceil != 101*125_000 || c.Prio != 2 {
		t.Errorf("1:20 after the change: rate %d, ceil %d, prio %d; want 6250000, 12625000, 2", c.Rate, c.Ceil, c.Prio)
	}
	if c := d.Classes()[1]; c.Rate != 125_000 {
		t.Errorf("1:10 after the change: rate %d; want its own 125000", c.Rate)
	}
	for _, tc := range []struct{ text, says string }{
		{changed + "; class parent 1:1 classid 1:30 rate 1mbit", "class 1:30 is not in the running tree"},
		{strings.Replace(changed, "; class parent 1:1 classid 1:20 rate 50mbit ceil 101mbit prio 2", "", 1), "class 1:20 is missing"},
		{strings.Replace(changed, "qdisc default 20", "qdisc default 10", 1), "the qdisc's words stay"},
		{strings.Replace(changed, "dst 10.0.0.0/8", "dst 10.0.0.0/16", 1), "the filters stay"},
		{strings.Replace(changed, "; qdisc parent 1:10 fq_codel", "", 1), "the leaves' qdiscs stay"},
	} {
		if err := Kind.Change(q, kindOf(t, tc.text)); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Change to %q: %v; want an error saying %q", tc.text, err, tc.says)
		}
	}
	if c := d.Classes()[2]; c.Rate != 50*125_000 {
		t.Errorf("1:20 after the refused changes: rate %d; want 6250000", c.Rate)
	}
}

// TestKindSaveRestore: Save keeps the quotas' counters as JSON, which
// Restore gives to an htb built from the same options, so that it goes on
// with the budget used and the time left; an htb with no quota saves
// nothing, and Restore refuses what is not a state.
func TestKindSaveRestore(t *testing.T) {
	const text = "qdisc default 10; class root classid 1:1 rate 100mbit quota 1mb per 1h then 1mbit; class parent 1:1 classid 1:10 rate 100mbit"
	clock := faketime.NewManualClock()
	o := kindOf(t, text)
	q, err := Kind.New(qdisctest.NewLink(clock), clock, o)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var pkts []*stack.PacketBuffer
	for range 5 {
		pkt := ipv4PacketOf(netip.AddrFrom4([4]byte{8, 8, 8, 8}), 1000)
		pkts = append(pkts, pkt)
		q.WritePacket(pkt)
	}
	qdisctest.WaitQuiescent(t, q)
	clock.Advance(time.Minute)
	qdisctest.WaitQuiescent(t, q)
	state := Kind.Save(q)
	var decoded []QuotaState
	if err := json.Unmarshal(state, &decoded); err != nil {
		t.Fatalf("Save = %q: %v; want JSON", state, err)
	}
	want := q.(*Discipline).Quotas()
	if !reflect.DeepEqual(decoded, want) || len(want) != 1 || want[0].ID != 0x10001 || want[0].Used != 5000 || want[0].Left <= 0 {
		t.Errorf("Save = %s; want the quotas %+v, 1:1's with 5000 bytes used", state, want)
	}
	restored, err := Kind.New(qdisctest.NewLink(clock), clock, o)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	if err := Kind.Restore(restored, state); err != nil {
		t.Fatalf("Restore(%s): %v", state, err)
	}
	if got := restored.(*Discipline).Quotas(); !reflect.DeepEqual(got, want) {
		t.Errorf("restored quotas %+v; want %+v", got, want)
	}
	if err := Kind.Restore(restored, []byte("{not json")); err == nil || !strings.Contains(err.Error(), "htb: the quotas' state") {
		t.Errorf("Restore of garbage: %v; want an error", err)
	}
	plain, err := Kind.New(qdisctest.NewLink(clock), clock, kindOf(t, twoClasses))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if s := Kind.Save(plain); s != nil {
		t.Errorf("Save of an htb with no quota = %q; want nil", s)
	}
	q.Close()
	qdisctest.CheckReleased(t, pkts)
}

// TestKindGraft: htb's Graft asks the runtime for the fq_codel its script
// grafts on leaves, by name, and New and NewTo give each such leaf a
// queue of the runtime's fq_codel, with its knobs (limit 100 here), on
// both paths; leaves the script leaves as pfifo stay so; a script that
// grafts nothing asks for nothing; the runtime's error is Graft's; and
// without Graft a leaf gets fq_codel's defaults.
func TestKindGraft(t *testing.T) {
	fqKind, ok := qdisc.Lookup(fqcodel.Kind.Name)
	if !ok {
		t.Fatal("fq_codel is not registered")
	}
	limit100 := fqcodel.Options{Limit: 100}
	var asked []string
	child := func(k string) (qdisc.Child, error) {
		asked = append(asked, k)
		return qdisc.Child{Kind: &fqKind, Options: limit100}, nil
	}
	o, err := Kind.Graft(kindOf(t, twoClasses), 1514, child)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "fq_codel" {
		t.Errorf("Graft asked for %q; want fq_codel, once", asked)
	}
	if o.String() != kindOf(t, twoClasses).String() {
		t.Errorf("Graft changed the script's words to %q", o.String())
	}
	clock := faketime.NewManualClock()
	for name, build := range map[string]func(qdisc.Options) (qdisc.Discipline, error){
		"New": func(o qdisc.Options) (qdisc.Discipline, error) { return Kind.New(qdisctest.NewLink(clock), clock, o) },
		"NewTo": func(o qdisc.Options) (qdisc.Discipline, error) {
			return Kind.NewTo(qdisctest.NewLink(clock), qdisctest.NewLink(clock), clock, o)
		},
	} {
		for _, tc := range []struct {
			o     qdisc.Options
			limit string // what 1:10's fq_codel shows
		}{{o, "limit 100p"}, {kindOf(t, twoClasses), "limit 10240p"}} {
			q, err := build(tc.o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cs := q.(*Discipline).Classes()
			if !strings.HasPrefix(cs[1].Leaf, "fq_codel") || !strings.Contains(cs[1].Leaf, tc.limit) || cs[2].Leaf != "pfifo" {
				t.Errorf("%s: leaves %q and %q; want fq_codel with %s on 1:10 and pfifo on 1:20", name, cs[1].Leaf, cs[2].Leaf, tc.limit)
			}
			q.Close()
		}
	}

	asked = nil
	if _, err := Kind.Graft(kindOf(t, "class root classid 1:1 rate 10mbit"), 1514, child); err != nil || len(asked) != 0 {
		t.Errorf("Graft of a script with no fq_codel: %v, asking for %q; want nothing asked", err, asked)
	}
	refuse := func(string) (qdisc.Child, error) { return qdisc.Child{}, fmt.Errorf("no fq_codel here") }
	if g, err := Kind.Graft(kindOf(t, twoClasses), 1514, refuse); g != nil || err == nil {
		t.Errorf("Graft with the runtime refusing = %v, %v; want nil and its error", g, err)
	}
}
