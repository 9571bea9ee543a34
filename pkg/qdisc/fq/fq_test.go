package fq_test

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fq"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

const mtu = 1514

// seqOf reads the sequence number qdisctest.MakePacket wrote.
func seqOf(pkt *stack.PacketBuffer) uint64 {
	return binary.BigEndian.Uint64(pkt.ToView().AsSlice()[:8])
}

// rig is an fq with the packets it was given, by flow hash.
type rig struct {
	t   *testing.T
	q   *fq.Queue
	seq uint64
	now int64
	all []*stack.PacketBuffer
}

func newRig(t *testing.T, cfg fq.Config) *rig {
	t.Helper()
	q, err := fq.NewQueue(cfg, mtu, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, q: q}
	t.Cleanup(func() {
		r.q.Purge()
		for _, p := range r.all {
			if n := p.ReadRefs(); n != 1 {
				t.Errorf("packet %d holds %d references after Purge, want the test's own 1", seqOf(p), n)
			}
			p.DecRef()
		}
	})
	return r
}

// send queues a packet of size bytes on flow hash; it reports whether fq
// took it.
func (r *rig) send(hash uint32, size int) bool {
	r.seq++
	p := qdisctest.MakePacket(size, hash, r.seq)
	r.all = append(r.all, p)
	p.IncRef()
	if !r.q.Enqueue(p, uint32(size), r.now) {
		p.DecRef()
		return false
	}
	return true
}

// next dequeues a packet and returns its flow hash (0: none).
func (r *rig) next() uint32 {
	p, _, ok := r.q.Dequeue(r.now)
	if !ok {
		return 0
	}
	defer p.DecRef()
	return p.Hash
}

// TestSparseFlowFirst: a flow that comes back from idle is served before
// the flows that keep a backlog, however deep theirs: a sparse flow's
// packet waits for at most the packet being sent.
func TestSparseFlowFirst(t *testing.T) {
	r := newRig(t, fq.Config{})
	for range 50 {
		for h := uint32(1); h <= 8; h++ {
			r.send(h, mtu)
		}
	}
	for range 100 { // the bulk flows settle on the old list
		r.next()
	}
	r.now += int64(time.Second)
	r.send(99, 100)
	if got := r.next(); got != 99 {
		t.Errorf("after a sparse flow's packet arrived, flow %d was served, want the sparse flow 99", got)
	}
}

// TestSparseFlowAmongMany: a sparse flow whose packets come faster than
// a round of 64 bulk flows (each a quantum) still has each served next,
// for as long as it runs (300 request/responses of two packets, 130 and
// 66 bytes, well past its first credit): it keeps its new-flow turn and
// earns a quantum a round, as it sends less than that. One that sends more than its quantum each time gets no such
// turn: it waits its round as a bulk flow does.
func TestSparseFlowAmongMany(t *testing.T) {
	r := newRig(t, fq.Config{Quantum: 2 * mtu, InitialQuantum: 2 * mtu})
	for range 20 {
		for h := uint32(1); h <= 64; h++ {
			r.send(h, mtu)
		}
	}
	for range 3 * 64 { // the bulk flows spend their first credit: all are old
		r.next()
	}
	bulk := uint32(0)
	for i := range 300 {
		r.send(99, 130)
		r.send(99, 66)
		for k := range 2 {
			if got := r.next(); got != 99 {
				t.Fatalf("sparse exchange %d, packet %d: flow %d was served first, want the sparse flow 99", i, k, got)
			}
		}
		for range 10 { // less than a round of the bulk flows, which stay backlogged
			r.next()
			r.send(bulk%64+1, mtu)
			bulk++
		}
	}
	// A greedy flow: 3 packets of an MTU each time, more than its quantum.
	waited := 0
	for range 4 {
		for range 3 {
			r.send(77, mtu)
		}
		for r.next() != 77 {
			waited++
		}
		r.next()
		r.next()
	}
	if waited < 64 {
		t.Errorf("a flow sending more than its quantum each time waited %d dequeues in all, want at least a round of the 64 bulk flows", waited)
	}
}

// TestRoundRobin: bulk flows of equal packets share the dequeues evenly,
// a quantum each per round, whatever their backlog.
func TestRoundRobin(t *testing.T) {
	r := newRig(t, fq.Config{Quantum: 2 * mtu, InitialQuantum: 2 * mtu})
	for range 90 {
		for h := uint32(1); h <= 3; h++ {
			r.send(h, mtu)
		}
	}
	r.send(4, mtu) // a flow with one packet
	counts := map[uint32]int{}
	for range 200 {
		counts[r.next()]++
	}
	for h := uint32(1); h <= 3; h++ {
		if c := counts[h]; c < 65 || c > 68 {
			t.Errorf("flow %d sent %d of 200 packets, want a third of what the others left (66)", h, c)
		}
	}
	if counts[4] != 1 {
		t.Errorf("the one-packet flow sent %d, want 1", counts[4])
	}
}

// TestLimits: a flow past FlowLimit has its packets refused, counted as
// flows_plimit, while other flows' are taken. Past Limit the arriving
// packet is taken and the longest flow loses its oldest packet, counted
// in Drops: the flow that made the queue pays, and its
// newest packets, which tell its receiver of the loss, stay. Refused and
// dropped packets are released (the rig checks each packet's references
// at the end).
func TestLimits(t *testing.T) {
	r := newRig(t, fq.Config{Limit: 10, FlowLimit: 4})
	took := 0
	for range 6 {
		if r.send(1, mtu) {
			took++
		}
	}
	if took != 4 {
		t.Errorf("flow 1 queued %d of 6, want its flow_limit 4", took)
	}
	for h := uint32(2); h <= 4; h++ {
		for range 2 {
			if !r.send(h, mtu) {
				t.Errorf("flow %d's packet refused under the limits", h)
			}
		}
	}
	if !r.send(5, mtu) {
		t.Error("an 11th packet, on a flow of its own, refused past limit 10: want room made from the longest flow")
	}
	if n, b := r.q.Len(); n != 10 || b != 10*mtu {
		t.Errorf("Len %d packets %d bytes, want 10 and %d (flow 1's oldest dropped)", n, b, 10*mtu)
	}
	if d := r.q.Drops(); d != 3 {
		t.Errorf("Drops %d, want 3 (2 refused at flow_limit, 1 dropped at limit)", d)
	}
	if want := "  flows 5 (inactive 0 throttled 0)\n  gc 0 highprio 0 throttled 0 flows_plimit 2"; r.q.TCXStats() != want {
		t.Errorf("xstats %q, want %q", r.q.TCXStats(), want)
	}
	var flow1 []uint64
	for {
		p, _, ok := r.q.Dequeue(r.now)
		if !ok {
			break
		}
		if p.Hash == 1 {
			flow1 = append(flow1, seqOf(p))
		}
		p.DecRef()
	}
	if want := []uint64{2, 3, 4}; !slices.Equal(flow1, want) {
		t.Errorf("flow 1 sent packets %v, want its newest %v", flow1, want)
	}
}

// TestPeek: a peeked packet is the next Dequeue's, still counted in Len.
func TestPeek(t *testing.T) {
	r := newRig(t, fq.Config{})
	r.send(1, 100)
	r.send(2, 200)
	sizes, at := make([]uint32, 4), make([]int64, 4)
	if n := r.q.Peek(r.now, sizes, at); n != 1 || sizes[0] != 100 {
		t.Fatalf("Peek %d, size %d; want 1 packet of 100", n, sizes[0])
	}
	r.send(3, 300) // a new flow, behind the peeked packet
	if n, _ := r.q.Len(); n != 3 {
		t.Errorf("Len %d after Peek, want 3", n)
	}
	for _, want := range []uint32{1, 2, 3, 0} {
		if got := r.next(); got != want {
			t.Fatalf("dequeued flow %d, want %d", got, want)
		}
	}
}

// TestFlowsBounded: a flood of distinct flows (a UDP sender's random
// ports) keeps at most Limit idle flows and a few busy ones, forgetting
// the oldest; flows idle for 3 s are forgotten too.
func TestFlowsBounded(t *testing.T) {
	r := newRig(t, fq.Config{Limit: 100})
	for h := uint32(1); h <= 10000; h++ {
		r.send(h, 64)
		r.next()
		r.now += int64(time.Microsecond)
	}
	var flows, inactive int
	parse(t, r.q.TCXStats(), &flows, &inactive)
	if flows > 102 {
		t.Errorf("%d flows kept after 10000 one-packet flows, want at most limit+2", flows)
	}
	r.now += int64(4 * time.Second)
	r.send(20000, 64)
	parse(t, r.q.TCXStats(), &flows, &inactive)
	if flows != 2 {
		t.Errorf("%d flows kept after 4 s idle and one new flow, want 2 (the new one, and the last one served, detached at the next dequeue)", flows)
	}
}

func parse(t *testing.T, x string, flows, inactive *int) {
	t.Helper()
	var gc, plimit int
	if _, err := fmtSscanf(x, flows, inactive, &gc, &plimit); err != nil {
		t.Fatalf("xstats %q: %v", x, err)
	}
}

// TestParse: tc-fq's words, and pacing's refused with the reason.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		words, want string
		err         bool
	}{
		{"", "limit 10000p flow_limit 1000p quantum 3028b initial_quantum 15140b refill_delay 40ms nopacing", false},
		{"limit 2000 flow_limit 50p quantum 3000 initial_quantum 10kb refill_delay 10ms nopacing", "limit 2000p flow_limit 50p quantum 3000b initial_quantum 10240b refill_delay 10ms nopacing", false},
		{"maxrate 1mbit", "", true},
		{"limit 0", "", true},
		{"quantum", "", true},
		{"quantum 2mb", "", true},
	} {
		cfg, err := fq.Parse(tc.words)
		if (err != nil) != tc.err {
			t.Errorf("Parse(%q): error %v, want error %v", tc.words, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		q, err := fq.NewQueue(cfg, mtu, nil)
		if err != nil {
			t.Errorf("New(%q): %v", tc.words, err)
			continue
		}
		if got := q.Config().String(); got != tc.want {
			t.Errorf("Parse(%q) shows %q, want %q", tc.words, got, tc.want)
		}
	}
}

// TestCutGSO: under a tbf that asks it (SplitGSOAt), a host-GSO packet
// is cut as it reaches its flow's head into pieces of at most the size
// given: a sparse flow's packet waits for one piece, not the whole GSO
// packet, the pieces carry the payload in order, the counts follow the
// pieces, and the GSO packet is released when its last piece is.
func TestCutGSO(t *testing.T) {
	const mss = 1448
	q, err := fq.NewQueue(fq.Config{Quantum: 3028, InitialQuantum: 3028}, mtu, nil)
	if err != nil {
		t.Fatal(err)
	}
	piece := uint64(3 * (mss + qdisctest.GSOHeaderLen))
	q.SplitGSOAt(piece)
	big := qdisctest.GSOPacket(10*mss, mss, 1, 1, 1000)
	wire := uint32(10 * (mss + qdisctest.GSOHeaderLen))
	big.IncRef() // the test's own, to watch
	if !q.Enqueue(big, wire, 0) {
		t.Fatal("the GSO packet was refused")
	}
	p, size, ok := q.Dequeue(0)
	if !ok || uint64(size) > piece {
		t.Fatalf("first Dequeue: %d bytes (ok %v), want a piece of at most %d", size, ok, piece)
	}
	payload, seq := qdisctest.GSOPayload(p)
	got := append([]byte(nil), payload...)
	if seq != 1000 {
		t.Errorf("first piece's sequence number %d, want 1000", seq)
	}
	p.DecRef()
	if n, b := q.Len(); n != 3 || b != uint64(wire)-uint64(size) {
		t.Errorf("after the first piece: Len %d packets %d bytes, want the 3 other pieces, %d bytes", n, b, uint64(wire)-uint64(size))
	}
	sparse := qdisctest.MakePacket(100, 2, 2)
	q.Enqueue(sparse, 100, 0)
	if p, _, _ := q.Dequeue(0); p.Hash != 2 {
		t.Errorf("after the first piece, flow %d was served, want the sparse flow 2", p.Hash)
		p.DecRef()
	} else {
		p.DecRef()
	}
	for {
		p, _, ok := q.Dequeue(0)
		if !ok {
			break
		}
		payload, _ := qdisctest.GSOPayload(p)
		got = append(got, payload...)
		p.DecRef()
	}
	want, _ := qdisctest.GSOPayload(big)
	if !slices.Equal(got, want) {
		t.Errorf("the pieces carry %d bytes that differ from the GSO packet's %d", len(got), len(want))
	}
	if n := big.ReadRefs(); n != 1 {
		t.Errorf("the GSO packet holds %d references after its pieces left, want the test's own 1", n)
	}
	big.DecRef()
	if !strings.Contains(q.TCXStats(), "gso_split 1") {
		t.Errorf("xstats %q do not count the cut", q.TCXStats())
	}
}

// TestByteLimit: past the byte limit a parent set (a tbf's limit or
// latency), or fq.DefaultByteLimit where none is set, room is made from
// the head of the longest flow, and the arriving packet is taken.
func TestByteLimit(t *testing.T) {
	r := newRig(t, fq.Config{})
	r.q.SetByteLimit(3000)
	if !r.send(1, 1500) || !r.send(2, 1400) {
		t.Fatal("packets within the byte limit refused")
	}
	if !r.send(3, 200) {
		t.Error("a packet past the byte limit refused: want flow 1's dropped to make room")
	}
	if n, b := r.q.Len(); n != 2 || b != 1600 {
		t.Errorf("Len %d packets %d bytes, want flows 2 and 3's 1600", n, b)
	}
	if d := r.q.Drops(); d != 1 {
		t.Errorf("Drops %d, want 1", d)
	}
	// The default, with the 1600 bytes still queued: one 64 KiB packet
	// short of it fits; one more makes a 64 KiB flow lose its packet.
	r.q.SetByteLimit(0)
	for h := uint32(10); h < 10+fq.DefaultByteLimit/(64<<10)-1; h++ {
		if !r.send(h, 64<<10) {
			t.Fatalf("packet %d refused under the default byte limit", h)
		}
	}
	if d := r.q.Drops(); d != 1 {
		t.Errorf("Drops %d under the default byte limit, want still 1", d)
	}
	r.send(99, 64<<10)
	if _, b := r.q.Len(); b > fq.DefaultByteLimit {
		t.Errorf("%d bytes queued past fq.DefaultByteLimit", b)
	}
	if d := r.q.Drops(); d != 2 {
		t.Errorf("Drops %d, want 2", d)
	}
}
