package fqcodel_test

import (
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// fuzzOps bounds the operations one input runs, so that each runs fast.
const fuzzOps = 200

// FuzzFQCoDel drives a Scheduler, configured from the input with small
// limits, through operations the input chooses: enqueues of hostile
// packets (0 to 65535 bytes, any header, on any hash), dequeues, peeks (as
// a tbf parent does), clock steps from nanoseconds to minutes, and purges.
// After every operation it checks what a user relies on:
//   - every packet is queued, sent or dropped, exactly once: Len counts
//     the packets still holding the queue's reference and their bytes,
//     and those released without being dequeued are exactly what Enqueue
//     reported dropped plus XStats' CoDel drops;
//   - the memory in XStats is exactly that of the packets queued (less
//     the one a Peek holds): none leaked, none counted twice;
//   - packets of one flow leave, or are dropped, in the order they came;
//   - every reference is released exactly once (after the last Purge,
//     each packet's count is back to the test's own);
//   - with ECN off (so that no header decides a packet's fate), the same
//     packets leave and drop as in the Linux model (model_test.go), up to
//     a drop among packets of 0 bytes only, whose victim Linux leaves
//     undefined (it never queues an empty skb).
func FuzzFQCoDel(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		in := qdisctest.NewInput(data)
		mtu := [...]uint32{1514, 9014, 256, 65535}[in.IntN(4)]
		cfg := fqcodel.Config{
			Limit: uint32(1 + in.IntN(64)),
			Flows: uint32(1 + in.IntN(16)),
			NoECN: in.IntN(2) == 1,
		}
		if in.IntN(8) == 0 {
			cfg.Flows = uint32(1 + in.IntN(1024))
		}
		if in.IntN(4) != 0 {
			cfg.MemoryLimit = uint32(1+in.IntN(256)) << in.IntN(16)
		}
		if in.IntN(4) != 0 {
			cfg.DropBatch = uint32(1 + in.IntN(16))
		}
		cfg.Quantum = uint32(in.IntN([...]int{1, 512, 4096, 1<<20 + 1}[in.IntN(4)]))
		cfg.Interval = time.Duration(1+in.IntN(1<<16)) << in.IntN(16)
		cfg.Target = cfg.Interval * time.Duration(in.IntN(257)) / 256
		q, err := fqcodel.NewScheduler(cfg, mtu)
		if err != nil {
			t.Skip(err)
		}
		r := newFuzzRun(t, q, cfg, mtu)
		for op := 0; op < fuzzOps && in.Len() > 0; op++ {
			switch in.IntN(16) {
			case 0, 1, 2, 3, 4, 5, 6:
				pkt := qdisctest.HostilePacket(in, qdisctest.HostileSize(in))
				r.enqueue(pkt, uint32(in.IntN(1<<16))<<16)
			case 7, 8, 9, 10:
				r.dequeue()
			case 11:
				r.peek()
			case 12, 13, 14:
				r.now += int64(in.IntN(1<<16)) << (8 * in.IntN(4))
			case 15:
				r.purge()
			}
			r.check()
		}
		r.finish()
	})
}

// fuzzPkt is a packet FuzzFQCoDel gave the queue.
type fuzzPkt struct {
	pkt       *stack.PacketBuffer
	seq       uint64
	size, mem uint32
	flow      int
	gone      bool // dequeued or dropped
}

// fuzzRun is one input's queue, what the test knows of it, and the model.
type fuzzRun struct {
	t   *testing.T
	q   *fqcodel.Scheduler
	cfg fqcodel.Config
	now int64

	all   []*fuzzPkt
	held  []*fuzzPkt // holding the queue's reference, in arrival order
	byPkt map[*stack.PacketBuffer]*fuzzPkt
	flows map[int][]*fuzzPkt // each flow's packets in arrival order, from its oldest held
	// enqDrops sums what Enqueue reported; released counts the packets
	// the queue released outside a Purge without handing them over, as
	// their reference counts show.
	enqDrops, released int
	maxSize            uint32

	// m is the Linux model, nil when it does not apply (ECN on) or no
	// longer does (a drop whose victim Linux leaves undefined).
	m *linuxFQCoDel
}

func newFuzzRun(t *testing.T, q *fqcodel.Scheduler, cfg fqcodel.Config, mtu uint32) *fuzzRun {
	c := q.Config()
	r := &fuzzRun{t: t, q: q, cfg: c, now: int64(time.Second), byPkt: map[*stack.PacketBuffer]*fuzzPkt{}, flows: map[int][]*fuzzPkt{}}
	if c.NoECN {
		r.m = newLinuxFQCoDel(cfg, mtu)
	}
	return r
}

// enqueue queues pkt on hash, giving the queue a reference of its own.
func (r *fuzzRun) enqueue(pkt *stack.PacketBuffer, hash uint32) {
	p := &fuzzPkt{pkt: pkt, seq: uint64(len(r.all)), size: uint32(pkt.Size()), mem: uint32(pkt.MemSize()),
		flow: int((uint64(hash) * uint64(r.cfg.Flows)) >> 32)}
	r.all = append(r.all, p)
	r.held = append(r.held, p)
	r.byPkt[pkt] = p
	r.flows[p.flow] = append(r.flows[p.flow], p)
	r.maxSize = max(r.maxSize, p.size)
	dropped := r.q.Enqueue(pkt.IncRef(), p.size, hash, r.now)
	r.enqDrops += dropped
	gone := r.collect()
	if len(gone) != dropped {
		r.t.Fatalf("enqueue of packet %d (%d bytes): Enqueue reported %d dropped, %d packets released", p.seq, p.size, dropped, len(gone))
	}
	if m := r.m; m != nil {
		// Past a limit Linux drops from the flow of largest backlog; when
		// every backlog is 0 bytes (empty packets), it has no such flow.
		over := m.qlen+1 > m.limit || m.memory+p.mem > m.memLimit
		if over && p.size == 0 && !slices.ContainsFunc(m.backlogs, func(b uint32) bool { return b > 0 }) {
			r.t.Logf("packet %d: a drop among empty packets only; the Linux model stops here", p.seq)
			r.m = nil
			return
		}
		r.sameDrops("enqueue", gone, m.enqueue(mpkt{seq: p.seq, size: p.size, mem: p.mem}, hash, r.now))
	}
}

// dequeue takes the next packet, if any, and releases it.
func (r *fuzzRun) dequeue() {
	peeked := r.q.Peeked()
	pkt, size, ok := r.q.Dequeue(r.now)
	gone := r.collect()
	var p *fuzzPkt
	if ok {
		p = r.byPkt[pkt]
		switch {
		case p == nil || p.gone:
			r.t.Fatalf("Dequeue returned a packet (%d bytes) not queued", size)
		case peeked != nil && pkt != peeked:
			r.t.Fatalf("Dequeue returned packet %d, not the one Peek took", p.seq)
		case size != p.size:
			r.t.Fatalf("Dequeue returned packet %d as %d bytes; it has %d", p.seq, size, p.size)
		case pkt.ReadRefs() != 2:
			r.t.Fatalf("Dequeue returned packet %d with %d references, want the test's and the one handed over", p.seq, pkt.ReadRefs())
		}
		pkt.DecRef()
		r.leave(p)
	} else if len(r.held) != 0 {
		r.t.Fatalf("Dequeue found nothing; %d packets queued", len(r.held))
	}
	if r.m != nil {
		want, wantDropped := r.m.dequeue(r.now)
		r.sameDrops("dequeue", gone, wantDropped)
		r.samePacket("Dequeue", p, want)
	}
}

// peek has the queue pick its next packet and keep it.
func (r *fuzzRun) peek() {
	size, _, ok := r.q.Peek(r.now)
	gone := r.collect()
	var p *fuzzPkt
	if ok {
		p = r.byPkt[r.q.Peeked()]
		if p == nil || p.gone || size != p.size {
			r.t.Fatalf("Peek: %d bytes, a packet not queued or of another size (%+v)", size, p)
		}
	} else if len(r.held) != 0 {
		r.t.Fatalf("Peek found nothing; %d packets queued", len(r.held))
	}
	if r.m != nil {
		want, wantDropped := r.m.peek(r.now)
		r.sameDrops("peek", gone, wantDropped)
		r.samePacket("Peek", p, want)
	}
}

// purge drops everything queued.
func (r *fuzzRun) purge() {
	var bytes uint64
	for _, p := range r.held {
		bytes += uint64(p.size)
	}
	n, b := r.q.Purge()
	if n != len(r.held) || b != bytes {
		r.t.Fatalf("Purge dropped %d packets (%d bytes); %d (%d bytes) were queued", n, b, len(r.held), bytes)
	}
	for _, p := range r.held {
		if refs := p.pkt.ReadRefs(); refs != 1 {
			r.t.Fatalf("packet %d: %d references after Purge, want the test's own 1", p.seq, refs)
		}
		p.gone = true
	}
	r.held = r.held[:0]
	if m := r.m; m != nil {
		// Linux's reset empties the flows and keeps their lists and
		// CoDel state, as Purge does.
		for i := range m.flows {
			m.flows[i].q = nil
			m.backlogs[i] = 0
		}
		m.qlen, m.backlog, m.memory, m.peeked = 0, 0, 0, nil
	}
}

// collect finds the packets the queue released during an operation (their
// count back to the test's own), marks them gone and returns them.
func (r *fuzzRun) collect() []*fuzzPkt {
	var gone []*fuzzPkt
	for _, p := range slices.Clone(r.held) {
		switch refs := p.pkt.ReadRefs(); refs {
		case 2:
		case 1:
			gone = append(gone, p)
			r.released++
			r.leave(p)
		default:
			r.t.Fatalf("packet %d (%d bytes): %d references; want the test's and the queue's (2), or the test's alone (1)", p.seq, p.size, refs)
		}
	}
	return gone
}

// leave marks p as no longer queued.
func (r *fuzzRun) leave(p *fuzzPkt) {
	p.gone = true
	r.held = slices.DeleteFunc(r.held, func(h *fuzzPkt) bool { return h == p })
}

// sameDrops fails unless the queue dropped the packets the model did.
func (r *fuzzRun) sameDrops(op string, got []*fuzzPkt, want []mpkt) {
	var g, w []uint64
	for _, p := range got {
		g = append(g, p.seq)
	}
	for _, p := range want {
		w = append(w, p.seq)
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		r.t.Fatalf("t=%v %s: dropped packets %v; Linux drops %v", time.Duration(r.now), op, g, w)
	}
}

// samePacket fails unless the queue handed over the packet the model did.
func (r *fuzzRun) samePacket(op string, got *fuzzPkt, want *mpkt) {
	switch {
	case (got == nil) != (want == nil):
		r.t.Fatalf("t=%v %s: got %+v; Linux %+v", time.Duration(r.now), op, got, want)
	case got != nil && got.seq != want.seq:
		r.t.Fatalf("t=%v %s: packet %d; Linux packet %d", time.Duration(r.now), op, got.seq, want.seq)
	}
}

// check asserts the invariants after an operation.
func (r *fuzzRun) check() {
	t := r.t
	if r.m != nil && r.m.unsure != "" {
		// Linux's fixed point may round this Newton step one below the
		// model's (model_test.go's newton); the model stops here.
		t.Logf("the Linux model stops: %s", r.m.unsure)
		r.m = nil
	}
	var bytes, mem uint64
	for _, p := range r.held {
		bytes += uint64(p.size)
		mem += uint64(p.mem)
	}
	if peeked := r.q.Peeked(); peeked != nil {
		mem -= uint64(r.byPkt[peeked].mem)
	}
	n, b := r.q.Len()
	x := r.q.XStats()
	switch {
	case int(n) != len(r.held) || b != bytes:
		t.Fatalf("Len %d packets, %d bytes; %d packets (%d bytes) hold the queue's reference", n, b, len(r.held), bytes)
	case x.MemoryUsage != mem:
		t.Fatalf("memory usage %d; the packets queued take %d", x.MemoryUsage, mem)
	case x.DropOverlimit != uint64(r.enqDrops) || uint64(r.released) != x.Drops():
		t.Fatalf("Enqueue reported %d drops, %d packets released; XStats %+v", r.enqDrops, r.released, x)
	case x.DropOvermemory > x.DropOverlimit || x.MaxPacket > r.maxSize || x.NewFlowsLen+x.OldFlowsLen > int(r.cfg.Flows):
		t.Fatalf("XStats %+v (largest packet %d, %d flows)", x, r.maxSize, r.cfg.Flows)
	case r.cfg.NoECN && x.ECNMark != 0:
		t.Fatalf("%d ECN marks with ECN off", x.ECNMark)
	}
	// Within a flow, packets leave from the head: once a packet is still
	// queued, every later one of its flow is too (but for the one Peek took
	// aside, which later ones may overtake in a drop).
	peeked := r.byPkt[r.q.Peeked()]
	for flow, list := range r.flows {
		for len(list) > 0 && list[0].gone {
			list = list[1:]
		}
		r.flows[flow] = list
		queued := -1
		for _, p := range list {
			switch {
			case p == peeked:
			case !p.gone && queued < 0:
				queued = int(p.seq)
			case p.gone && queued >= 0:
				t.Fatalf("flow %d: packet %d left before packet %d, which came before it", flow, p.seq, queued)
			}
		}
	}
	if m := r.m; m != nil && (n != m.qlen || b != uint64(m.backlog) || x.MemoryUsage != uint64(m.memory)) {
		t.Fatalf("%d packets, %d bytes, %d bytes of memory queued; Linux %d, %d, %d", n, b, x.MemoryUsage, m.qlen, m.backlog, m.memory)
	}
}

// finish purges the queue and checks that every reference was released
// exactly once, and the counters against the model's.
func (r *fuzzRun) finish() {
	if m := r.m; m != nil {
		x := r.q.XStats()
		if x.DropOverlimit != uint64(m.dropOverlimit) || x.CoDelDrops != uint64(m.codelDrops) || x.MaxPacket != m.maxpacket || x.NewFlowCount != uint64(m.newFlowCount) {
			r.t.Fatalf("XStats %+v; Linux: drop_overlimit %d, codel drops %d, maxpacket %d, new_flow_count %d", x, m.dropOverlimit, m.codelDrops, m.maxpacket, m.newFlowCount)
		}
	}
	r.q.Purge()
	pkts := make([]*stack.PacketBuffer, len(r.all))
	for i, p := range r.all {
		pkts[i] = p.pkt
	}
	qdisctest.CheckReleased(r.t, pkts)
}
