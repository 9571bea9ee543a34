package kindproof_test

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// parse parses args as runsc does: the flags RegisterFlags registers.
func parse(args ...string) (*runscflags.Config, error) {
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	runscflags.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return runscflags.NewFromFlags(fs)
}

// mustParse is parse, failing t on an error.
func mustParse(t *testing.T, args ...string) *runscflags.Config {
	t.Helper()
	c, err := parse(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return c
}

// errorSays fails t unless err says each of says.
func errorSays(t *testing.T, what string, err error, says ...string) {
	t.Helper()
	for _, s := range says {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %v; want one saying %q", what, err, s)
		}
	}
}

// both are bfifo's flags in both directions: 3000 bytes on the send path,
// 2000 on the receive path.
var both = []string{"--qdisc=bfifo", "--qdisc-bfifo=limit 3000", "--qdisc-ingress=bfifo", "--qdisc-ingress-bfifo=limit 2000b"}

// TestFlags: the kind has --qdisc=bfifo and --qdisc-bfifo, and
// --qdisc-ingress=bfifo and --qdisc-ingress-bfifo, with its usage as
// their help; Args gives its words back as the kind writes them; bad
// words and words for a kind not in force are refused naming the flag.
func TestFlags(t *testing.T) {
	c := mustParse(t, both...)
	args := c.Args()
	for _, want := range []string{"--qdisc=bfifo", "--qdisc-bfifo=limit 3000", "--qdisc-ingress=bfifo", "--qdisc-ingress-bfifo=limit 2000"} {
		if !slices.Contains(args, want) {
			t.Errorf("Args() = %q; want %q among them", args, want)
		}
	}
	if again := mustParse(t, args...); !slices.Equal(again.Args(), args) {
		t.Errorf("Args of the Config Args give: %q; want %q", again.Args(), args)
	}
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	runscflags.RegisterFlags(fs)
	for _, name := range []string{"qdisc-bfifo", "qdisc-ingress-bfifo"} {
		if f := fs.Lookup(name); f == nil || !strings.Contains(f.Usage, bfifoKind.Usage) {
			t.Errorf("--%s: %v; want a flag whose help has the kind's usage", name, f)
		}
	}
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"--qdisc=bfifo", "--qdisc-bfifo=limit lots"}, []string{"qdisc-bfifo", "give bytes"}},
		{[]string{"--qdisc=bfifo", "--qdisc-bfifo=burst 3000"}, []string{"qdisc-bfifo", `unknown word "burst"`}},
		{[]string{"--qdisc-bfifo=limit 3000"}, []string{"--qdisc-bfifo", "--qdisc=bfifo"}},
		{[]string{"--qdisc-ingress=tbf", "--qdisc-ingress-rate=1mbit", "--qdisc-ingress-burst=10k", "--qdisc-ingress-bfifo=limit 3000"}, []string{"--qdisc-ingress-bfifo", "--qdisc-ingress=bfifo"}},
		{[]string{"--qdisc=bfifoo"}, []string{"bfifo"}},
	} {
		_, err := parse(tc.args...)
		errorSays(t, strings.Join(tc.args, " "), err, tc.says...)
	}
}

// nic is a NIC built from flags as runsc builds it, with its parts.
type nic struct {
	*runscflags.NIC
	clock    *faketime.ManualClock
	out, up  *qdisctest.Link // what it sends; what it delivers up
	plug     qdisctest.Plug  // holds both directions' dispatchers
	q        stack.QueueingDiscipline
	receiver stack.NetworkDispatcher // the receive path, as a link sees it
}

// plugged is the stack above the receive path: it waits in the plug, then
// records what is delivered.
type plugged struct {
	*qdisctest.Link
	plug *qdisctest.Plug
}

func (p plugged) DeliverNetworkPacket(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	p.plug.Wait()
	p.Link.DeliverNetworkPacket(proto, pkt)
}

// newNIC builds c's shaping as a runtime does, closed when t ends.
func newNIC(t *testing.T, c *runscflags.Config) *nic {
	t.Helper()
	n := &nic{clock: faketime.NewManualClock()}
	n.out, n.up = qdisctest.NewLink(n.clock), qdisctest.NewLink(n.clock)
	n.out.OnWrite = n.plug.Wait
	q, err := c.NewQueueingDiscipline(n.out, n.clock)
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.NewIngress(n.out, n.clock)
	if err != nil {
		q.Close()
		t.Fatal(err)
	}
	in.Attach(plugged{n.up, &n.plug})
	t.Cleanup(func() { q.Close(); in.Close() })
	n.q, n.receiver = q, in
	n.NIC = runscflags.NewNIC("eth0", c, n.out, n.clock, q, in)
	return n
}

// direction is one path of a NIC: how a packet enters it, where it leaves
// and its statistics.
type direction struct {
	name  string
	send  func(n *nic, pkt *stack.PacketBuffer)
	left  func(n *nic) *qdisctest.Link
	stats func(n *nic) qdisc.Stats
	limit func(n *nic) int // its byte limit, as the NIC shows it
}

var directions = []direction{
	{
		name:  "send",
		send:  func(n *nic, pkt *stack.PacketBuffer) { _ = n.q.WritePacket(pkt) },
		left:  func(n *nic) *qdisctest.Link { return n.out },
		stats: func(n *nic) qdisc.Stats { s, _ := n.Stats(); return s },
	},
	{
		name:  "receive",
		send:  func(n *nic, pkt *stack.PacketBuffer) { n.receiver.DeliverNetworkPacket(header.IPv4ProtocolNumber, pkt) },
		left:  func(n *nic) *qdisctest.Link { return n.up },
		stats: func(n *nic) qdisc.Stats { _, s := n.Stats(); return s },
	},
}

// flood offers count packets of 1000 bytes to d while its dispatcher is
// held with the first in the link, then lets it drain, and returns the
// packets and bytes that left and the drops the qdisc counted.
func flood(t *testing.T, n *nic, d direction, count int) (left, bytes, drops uint64) {
	t.Helper()
	link := d.left(n)
	before, beforeBytes := link.Count()
	beforeDrops := d.stats(n).Drops
	offer := func(seq int) {
		pkt := qdisctest.MakePacket(1000, 0, uint64(seq))
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
		d.send(n, pkt)
		pkt.DecRef()
	}
	n.plug.While(func() {
		offer(0)
		n.plug.WaitStuck(t, 1)
		for i := 1; i < count; i++ {
			offer(i)
		}
	})
	waitQuiet(t, n)
	p, b := link.Count()
	return p - before, b - beforeBytes, d.stats(n).Drops - beforeDrops
}

// waitQuiet waits until both directions are idle.
func waitQuiet(t *testing.T, n *nic) {
	t.Helper()
	qdisctest.WaitQuiescent(t, n.q.(qdisctest.Quiescer))
	qdisctest.WaitQuiescent(t, n.receiver.(qdisctest.Quiescer))
}

// TestByteLimit: on each path, the bytes that leave are the packet in
// the link and what the byte limit holds behind it; the rest are dropped
// and counted, and every packet is accounted once.
func TestByteLimit(t *testing.T) {
	n := newNIC(t, mustParse(t, both...))
	for _, tc := range []struct {
		d     direction
		queue uint64 // packets of 1000 bytes the limit holds
	}{{directions[0], 3}, {directions[1], 2}} {
		t.Run(tc.d.name, func(t *testing.T) {
			left, bytes, drops := flood(t, n, tc.d, 10)
			if left != 1+tc.queue || bytes != 1000*left || drops != 10-left {
				t.Errorf("%d packets (%d bytes) left, %d dropped; want %d left (1 in the link, %d queued) and %d dropped", left, bytes, drops, 1+tc.queue, tc.queue, 9-tc.queue)
			}
			if s := tc.d.stats(n); s.Packets != left || s.Bytes != bytes || s.BacklogBytes != 0 {
				t.Errorf("Stats %+v; want the %d packets (%d bytes) that left, nothing queued", s, left, bytes)
			}
		})
	}
}

// TestAnnotations: a pod may lower bfifo's limit, by its Tighten, and the
// lower limit is what its packets meet; it may not raise it, nor put
// bfifo in place of the operator's qdisc; a Kubernetes bandwidth, which
// bfifo has no ceiling for (no Fit), puts the operator's tbf in its
// place.
func TestAnnotations(t *testing.T) {
	op := mustParse(t, both...)
	key := runscflags.AnnotationPrefix + "qdisc-bfifo"
	pod := *op
	if err := pod.ApplyAnnotations(map[string]string{key: "limit 2000", runscflags.AnnotationPrefix + "qdisc-ingress-bfifo": "limit 1000"}); err != nil {
		t.Fatal(err)
	}
	if got := pod.Get("qdisc-bfifo"); got != "limit 2000" {
		t.Errorf("after the annotation: --qdisc-bfifo=%q; want \"limit 2000\"", got)
	}
	n := newNIC(t, &pod)
	for i, want := range []uint64{1 + 2, 1 + 1} {
		if left, _, _ := flood(t, n, directions[i], 10); left != want {
			t.Errorf("%s: %d packets left under the pod's limit; want %d", directions[i].name, left, want)
		}
	}
	for _, tc := range []struct {
		operator    []string
		annotations map[string]string
		says        []string
	}{
		{both, map[string]string{key: "limit 9000"}, []string{"limit 9000 is above the operator's 3000"}},
		{both, map[string]string{key: "limit many"}, []string{"give bytes"}},
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=10k"}, map[string]string{key: "limit 1000"}, []string{"does not run bfifo"}},
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=10k"}, map[string]string{runscflags.AnnotationPrefix + "qdisc": "bfifo"}, []string{"bfifo"}},
	} {
		c := mustParse(t, tc.operator...)
		err := c.ApplyAnnotations(tc.annotations)
		errorSays(t, strings.Join(tc.operator, " "), err, tc.says...)
	}
	kube := *op
	if err := kube.ApplyAnnotations(map[string]string{runscflags.AnnotationKubeEgress: "8M"}); err != nil {
		t.Fatal(err)
	}
	if kube.Get("qdisc") != "tbf" || kube.Get("qdisc-tbf-rate") != "1000000" || kube.Get("qdisc-bfifo") != "" {
		t.Errorf("after a Kubernetes bandwidth of 8M: %v; want a tbf at 1000000 bytes/s in bfifo's place", kube.Args())
	}
}

// TestShowChangeCheckpoint: `runsc qdisc show` prints the kind's line in
// each direction; `runsc qdisc change` changes its limit in place, which
// the next packets meet; its metrics are read from it; a checkpoint's
// state gives a NIC the changed limits and the drops counted so far
// (what bfifo's Save keeps) where the restoring host's flags allow them,
// and is refused, naming bfifo, where they do not: the change raised the
// send path's limit, which a checkpoint, the sandbox's word, may not.
func TestShowChangeCheckpoint(t *testing.T) {
	c := mustParse(t, both...)
	n := newNIC(t, c)
	show := n.Show()
	for _, want := range []string{"qdisc bfifo 8001: dev eth0 root refcnt 2 limit 3000b", "qdisc bfifo 8002: dev eth0 parent ffff: limit 2000b"} {
		if !strings.Contains(show, want) {
			t.Errorf("Show():\n%s\nwant a line %q", show, want)
		}
	}
	if _, err := runscflags.Change([]*runscflags.NIC{n.NIC}, []string{"--qdisc-bfifo=limit 5000", "--qdisc-ingress-bfifo=limit 1000"}); err != nil {
		t.Fatal(err)
	}
	if show := n.Show(); !strings.Contains(show, "limit 5000b") || !strings.Contains(show, "limit 1000b") {
		t.Errorf("Show() after the change:\n%s\nwant limits of 5000 and 1000 bytes", show)
	}
	var drops [2]uint64
	for i, want := range []uint64{1 + 5, 1 + 1} {
		left, _, d := flood(t, n, directions[i], 10)
		if left != want {
			t.Errorf("%s: %d packets left after the change; want %d", directions[i].name, left, want)
		}
		drops[i] = d
	}
	egress, ingress := n.Samples()
	for i, ks := range []runscflags.KindSamples{egress, ingress} {
		want := []qdisc.Sample{{Metric: "backlog_bytes", Member: "0"}, {Metric: "dropped_packets", Member: "0", Value: drops[i]}}
		if ks.Kind != "bfifo" || !slices.Equal(ks.Samples, want) {
			t.Errorf("%s: Samples %+v; want bfifo's %+v", directions[i].name, ks, want)
		}
	}
	if _, err := runscflags.Change([]*runscflags.NIC{n.NIC}, []string{"--qdisc-bfifo=limit 0"}); err == nil {
		t.Error("a change to limit 0 was taken")
	}

	state := n.State(true)
	if err := newNIC(t, mustParse(t, both...)).Restore(state); err == nil || !strings.Contains(err.Error(), "bfifo: limit 5000 is above the operator's 3000") {
		t.Errorf("Restore of a raised limit on a NIC built from the same flags: %v; want bfifo's refusal", err)
	}
	// The restoring host's operator allows the raised limit; the lowered
	// one on the receive path tightens its 2000 bytes.
	raised := []string{"--qdisc=bfifo", "--qdisc-bfifo=limit 5000", "--qdisc-ingress=bfifo", "--qdisc-ingress-bfifo=limit 2000b"}
	restored := newNIC(t, mustParse(t, raised...))
	if err := restored.Restore(state); err != nil {
		t.Fatal(err)
	}
	for i, line := range []string{"root refcnt 2 limit 5000b\n Sent 0 bytes 0 pkt (dropped 4,", "parent ffff: limit 1000b\n Sent 0 bytes 0 pkt (dropped 8,"} {
		if show := restored.Show(); drops[i] != uint64(4+4*i) || !strings.Contains(show, line) {
			t.Errorf("restored:\n%s\nwant the changed limit and the %d drops counted before the checkpoint: %q", show, drops[i], line)
		}
	}
	if left, _, _ := flood(t, restored, directions[0], 10); left != 1+5 {
		t.Errorf("restored: %d packets left; want 6, under the changed limit", left)
	}
	bad := state
	bad.Egress = []byte{0xff}
	if err := newNIC(t, mustParse(t, both...)).Restore(bad); err == nil || !strings.Contains(err.Error(), "bfifo") {
		t.Errorf("Restore of a damaged state: %v; want an error naming bfifo", err)
	}
}

// TestCeiling: `runsc qdisc change --qdisc-tbf-rate=... --qdisc-tbf-burst=...`
// on a sandbox started with bfifo puts a tbf's buckets over its queue by
// its Kind's Ceiling: `runsc qdisc show` prints bfifo under the tbf, and
// what leaves at once is the bucket's burst; a rate of 0 lifts the
// ceiling, and the backlog leaves. Nothing of runsc-flags names bfifo.
func TestCeiling(t *testing.T) {
	n := newNIC(t, mustParse(t, "--qdisc=bfifo", "--qdisc-bfifo=limit 100000"))
	if _, err := runscflags.Change([]*runscflags.NIC{n.NIC}, []string{"--qdisc-tbf-rate=1mbit", "--qdisc-tbf-burst=5000"}); err != nil {
		t.Fatalf("a ceiling over bfifo: %v", err)
	}
	show := n.Show()
	for _, want := range []string{"qdisc tbf 8001: dev eth0 root refcnt 2 rate 1Mbit burst 5000b", "qdisc bfifo 8002: dev eth0 parent 8001:1 limit 100000b"} {
		if !strings.Contains(show, want) {
			t.Errorf("Show():\n%s\nwant a line %q", show, want)
		}
	}
	// The first is held in the link; the bucket's 5000 bytes let it and
	// four more of 1000 bytes go now; the rest wait for tokens.
	if left, _, drops := flood(t, n, directions[0], 20); left != 5 || drops != 0 {
		t.Errorf("under the ceiling %d packets left at once, %d dropped; want the burst's 5, none dropped", left, drops)
	}
	if _, err := runscflags.Change([]*runscflags.NIC{n.NIC}, []string{"--qdisc-tbf-rate=0"}); err != nil {
		t.Fatalf("lifting the ceiling: %v", err)
	}
	waitQuiet(t, n)
	if p, _ := n.out.Count(); p != 20 {
		t.Errorf("%d packets left once the ceiling was lifted; want all 20", p)
	}
	if show := n.Show(); strings.Contains(show, "qdisc tbf") {
		t.Errorf("Show() with the ceiling lifted:\n%s\nwant no tbf", show)
	}
}
