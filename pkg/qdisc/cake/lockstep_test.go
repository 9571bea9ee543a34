package cake

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake/caketest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// The lockstep harness: a Sched (the core) and a caketest.Model (Linux's
// sch_cake transcribed apart from it) are given the same configuration,
// hash, random source and packets at the same times on a step clock, and
// must make the same decisions.
//
// Compared after every call: whether a packet left and which (its id),
// its length and its network bytes (CE marks and wash; for a segment of
// a split GSO packet the DS field only, as the core's gso.Split and the
// model rewrite other header fields differently); the packets dropped
// (by id: the harness holds one reference of its own on every packet it
// queues, so a packet the core dropped is one whose count falls back to
// the harness's alone) against the model's drop events, and the drop
// count; the queue length and backlog; the overlimit count; every
// per-tin counter tc -s shows (sent, backlog, drops, marks, ACK drops,
// way hits, misses and collisions, sparse, bulk and unresponsive flows,
// max packet length, quantum, rate, target, interval, the delays); the
// memory limit, capacity estimate and max lengths; and, when both wait
// on the shaper, NextEvent against NextTime.
//
// Not compared: the memory used (the core counts PacketBuffer.MemSize,
// the model skb->truesize; the harness gives the model each packet's
// MemSize as its TrueSize, so they agree but for split segments, which
// the model sizes by their length), the min lengths (the model keeps
// Linux's u16, starting at 65535; the core does not truncate), which
// segment of a split packet COBALT or the memory limit dropped (the core
// makes new PacketBuffers for them: counted, not named).

// paramsOf maps a Config on a link of MTU plus header mtu to the model's
// Params. TestParamsOfCoversConfig checks that every field is mapped.
// FwMark has no Params field: Validate refuses any but 0.
func paramsOf(c Config, mtu uint32) caketest.Params {
	p := caketest.Params{
		Rate:            c.Bandwidth,
		AutorateIngress: c.Autorate,
		Interval:        uint32(c.RTT / time.Microsecond),
		Target:          uint32(c.Target / time.Microsecond),
		FlowMode:        caketest.FlowMode(c.Isolation),
		TinMode:         caketest.TinMode(c.Diffserv),
		Wash:            c.Wash,
		AckFilter:       caketest.AckFilter(c.AckFilter),
		SplitGSO:        c.SplitGSO,
		Ingress:         c.Ingress,
		OverheadFlag:    !c.Raw,
		Overhead:        int16(c.Overhead),
		MPU:             uint16(c.MPU),
		ATM:             caketest.ATMMode(c.ATM),
		Memory:          c.Memlimit,
		MTU:             mtu,
		Limit:           10240,
		TrueHeap:        true, // the core's deliberate deviation (doc.go)
	}
	if c.NAT {
		p.FlowMode |= 64
	}
	return p
}

// TestParamsOfCoversConfig: every field of Config changes the Params
// paramsOf makes (all but FwMark, which the model has no field for and
// Validate refuses).
func TestParamsOfCoversConfig(t *testing.T) {
	base := DefaultConfig()
	base.Bandwidth = 1_000_000
	want := paramsOf(base, 1514)
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if name == "FwMark" {
			continue
		}
		c := base
		v := reflect.ValueOf(&c).Elem().Field(i)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Uint8, reflect.Uint32, reflect.Uint64:
			v.SetUint(v.Uint() + 1)
		case reflect.Int32, reflect.Int64:
			v.SetInt(v.Int() + int64(time.Microsecond))
		default:
			t.Fatalf("Config.%s: kind %v not handled by this test", name, v.Kind())
		}
		got := paramsOf(c, 1514)
		got.Hasher, got.Rand = nil, nil
		if reflect.DeepEqual(got, want) {
			t.Errorf("paramsOf ignores Config.%s", name)
		}
	}
}

// coreHasher is the model's Hasher that gives the core's hashes: the
// core hashes a packet's flow with flowhash.Hasher.Packet, and its hosts
// with Hosts (or HostPairBytes), both from the packet's network header
// on, as HostsBytes does from the same bytes (the model's Packet.Data).
// The harness never sets pkt.Hash, so the core always hashes the bytes.
type coreHasher struct{ h flowhash.Hasher }

func (c coreHasher) Hash(p *caketest.Packet) caketest.Hashes {
	hs := c.h.HostsBytes(tcpip.NetworkProtocolNumber(p.Proto), p.Data)
	return caketest.Hashes{Flow: hs.Flow, SrcHost: hs.Src, DstHost: hs.Dst}
}

// pcgRand is the model's Rand drawing what the core's random32 draws
// from a PCG seeded as newSched seeds it.
func pcgRand(seed uint64) func() uint32 {
	r := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	return func() uint32 { return uint32(r.Uint64()) }
}

// arrival is a packet that arrives at a time. gsoMSS, if not 0, makes it
// a host-GSO TCP packet of that MSS (its payload must be larger).
type arrival struct {
	at     int64
	p      pk
	gsoMSS int
	// change, if not nil, makes this a change of both sides to it at at
	// (cake_change) instead of a packet.
	change *Config
}

// lockstep drives a core and a model side by side.
type lockstep struct {
	t     testing.TB
	cfg   Config
	core  *Sched
	model *caketest.Model
	// hasher and rand are the model's, for a change's Params.
	hasher caketest.Hasher
	rand   func() uint32
	now    int64

	// held are the packets the core holds, by id, each with one more
	// reference of the harness's own.
	held map[uint64]*stack.PacketBuffer
	ids  map[*stack.PacketBuffer]uint64
	// split are the ids of GSO packets split into segments.
	split  map[uint64]bool
	sizes  map[uint64]uint32
	nextID uint64

	// peek makes every dequeue of the core a Peek then a Dequeue at the
	// same time, which must send what Dequeue alone would.
	peek bool

	enqueued, departed, coreDrops uint64
	trace                         []string
	waits                         int
}

const lockstepMTU = 1514

// lockstepStart is when the harness makes both sides, and the time its
// arrivals count from: a minute after boot, not at ktime 0, so that state
// Linux starts at 0 rather than at cake_init's time (autorate-ingress's
// windows, last_reconfig_time) is seen to.
const lockstepStart = 60e9

func newLockstep(t testing.TB, cfg Config, seed uint64) *lockstep {
	t.Helper()
	h := flowhash.WithSeed(uint32(seed))
	core, err := newSched(cfg, lockstepMTU, lockstepStart, h, seed)
	if err != nil {
		t.Fatalf("newSched(%v): %v", cfg, err)
	}
	p := paramsOf(cfg, lockstepMTU)
	p.Hasher = coreHasher{h}
	p.Rand = pcgRand(seed)
	model, err := caketest.New(p, lockstepStart)
	if err != nil {
		t.Fatalf("caketest.New(%+v): %v", p, err)
	}
	l := &lockstep{t: t, cfg: cfg, core: core, model: model, hasher: p.Hasher, rand: p.Rand, held: map[uint64]*stack.PacketBuffer{}, ids: map[*stack.PacketBuffer]uint64{}, split: map[uint64]bool{}, sizes: map[uint64]uint32{}, nextID: 1, now: lockstepStart}
	t.Cleanup(l.close)
	return l
}

// close gives back every reference: the core's (Purge) and the
// harness's.
func (l *lockstep) close() {
	l.core.Purge()
	for id, pkt := range l.held {
		pkt.DecRef()
		delete(l.held, id)
	}
}

func (l *lockstep) logf(format string, args ...any) {
	l.trace = append(l.trace, fmt.Sprintf("t=%d ", l.now)+fmt.Sprintf(format, args...))
	if len(l.trace) > 12 {
		l.trace = l.trace[len(l.trace)-12:]
	}
}

// fail reports the first divergence with its context and stops.
func (l *lockstep) fail(format string, args ...any) {
	l.t.Helper()
	ms := l.model.Stats()
	n, bytes := l.core.Len()
	l.t.Fatalf("divergence at t=%d: %s\nconfig: %v\ncore: qlen %d backlog %d drops %d overlimits %d next %d tins %+v\nmodel: qlen %d backlog %d drops %d overlimits %d next %d tins %+v\nlast ops:\n  %s",
		l.now, fmt.Sprintf(format, args...), l.cfg,
		n, bytes, l.core.Drops(), l.core.Overlimits(), l.core.NextEvent(), l.core.XStats().Tins,
		ms.BacklogPackets, ms.BacklogBytes, ms.Drops, ms.Overlimits, l.model.NextTime(), ms.Tins,
		strings.Join(l.trace, "\n  "))
}

// build makes a's packet for both sides, with the next id.
func (l *lockstep) build(a arrival) (*stack.PacketBuffer, caketest.Packet, uint32) {
	pkt := a.p.build()
	var mp caketest.Packet
	mp.ID = l.nextID
	l.nextID++
	mp.Proto = uint16(pkt.NetworkProtocolNumber)
	mp.MacLen = len(pkt.LinkHeader().Slice())
	mp.Data = append(append(append([]byte{}, pkt.NetworkHeader().Slice()...), pkt.TransportHeader().Slice()...), pkt.Data().AsRange().ToSlice()...)
	size := uint32(pkt.Size())
	if a.gsoMSS != 0 {
		typ := stack.GSOTCPv4
		if a.p.v6 {
			typ = stack.GSOTCPv6
		}
		pkt.GSOOptions = stack.GSO{Type: typ, NeedsCsum: true, CsumOffset: 16, MSS: uint16(a.gsoMSS), L3HdrLen: uint16(len(pkt.NetworkHeader().Slice())), MaxSize: 65536}
		segs := gso.Segments(pkt)
		mp.GSOSize, mp.GSOSegs = uint32(a.gsoMSS), uint32(segs)
		size = uint32(gso.WireSize(pkt))
	}
	mp.TrueSize = uint32(pkt.MemSize())
	return pkt, mp, size
}

// enqueue queues a on both sides and compares.
func (l *lockstep) enqueue(a arrival) {
	l.t.Helper()
	pkt, mp, size := l.build(a)
	id := mp.ID
	segs := gso.Segments(pkt)
	isSplit := l.cfg.SplitGSO && segs > 1
	l.logf("enqueue id %d (%d bytes, %d segs) %+v", id, size, segs, a.p)
	pkt.IncRef()
	l.held[id], l.ids[pkt], l.sizes[id] = pkt, id, size
	ok := l.core.Enqueue(pkt, size, l.now)
	ev := l.model.Enqueue(l.now, mp)
	for _, e := range ev {
		if e.Kind == caketest.Refused {
			l.fail("model refused id %d: %s", id, e.Reason)
		}
	}
	if !ok {
		pkt.DecRef() // nothing taken
		if len(ev) != 1 || ev[0].Kind != caketest.DropGSO {
			l.fail("core refused id %d; model events %v", id, ev)
		}
	}
	if isSplit && ok {
		l.split[id] = true
		n := uint64(segs)
		l.enqueued += n
	} else {
		l.enqueued++
	}
	l.compareDrops("enqueue", ev)
	l.compareState("enqueue")
	if l.core.bufferUsed > l.core.bufferLimit {
		l.fail("memory %d over the limit %d after an enqueue", l.core.bufferUsed, l.core.bufferLimit)
	}
}

// change changes both sides to cfg in place and compares.
func (l *lockstep) change(cfg Config) {
	l.t.Helper()
	l.logf("change to %v", cfg)
	cerr := l.core.Change(cfg)
	p := paramsOf(cfg, lockstepMTU)
	p.Hasher, p.Rand = l.hasher, l.rand
	merr := l.model.Change(p, l.now)
	if (cerr == nil) != (merr == nil) {
		l.fail("change to %v: core says %v, model %v", cfg, cerr, merr)
	}
	if cerr == nil {
		l.cfg = cfg
	}
	l.compareDrops("change", nil)
	l.compareState("change")
}

// compareDrops compares the packets the core dropped in the last call
// (found by their references) with the model's drop events.
func (l *lockstep) compareDrops(op string, ev []caketest.Event) {
	l.t.Helper()
	var coreIDs, modelIDs []uint64
	for id, pkt := range l.held {
		if pkt.ReadRefs() == 1 {
			if !l.split[id] {
				coreIDs = append(coreIDs, id)
			}
			delete(l.ids, pkt)
			pkt.DecRef()
			delete(l.held, id)
		}
	}
	var modelDrops uint64
	for _, e := range ev {
		switch e.Kind {
		case caketest.MarkCE, caketest.Refused:
			continue
		}
		modelDrops++
		if !l.split[e.ID] {
			modelIDs = append(modelIDs, e.ID)
		}
	}
	slices.Sort(coreIDs)
	slices.Sort(modelIDs)
	if !slices.Equal(coreIDs, modelIDs) {
		l.fail("%s: core dropped %v, model %v (events %+v)", op, coreIDs, modelIDs, ev)
	}
	if d := l.core.Drops() - l.coreDrops; d != modelDrops {
		l.fail("%s: core counted %d drops, model made %d (events %+v)", op, d, modelDrops, ev)
	}
	l.coreDrops = l.core.Drops()
	if len(coreIDs) > 0 || modelDrops > 0 {
		l.logf("%s dropped %v (%d)", op, coreIDs, modelDrops)
	}
}

// dequeue dequeues once on both sides and compares; it reports whether a
// packet left.
func (l *lockstep) dequeue() bool {
	l.t.Helper()
	var sizes [1]uint32
	var arrived [1]int64
	peeked := 0
	if l.peek {
		peeked = l.core.Peek(l.now, sizes[:], arrived[:])
	}
	var pkt *stack.PacketBuffer
	var size uint32
	var ok bool
	if !l.peek || peeked == 1 {
		// After a Peek that found nothing, a caller does not dequeue.
		pkt, size, ok = l.core.Dequeue(l.now)
	}
	mp, ev := l.model.Dequeue(l.now)
	if l.peek && (peeked == 1) != ok || peeked == 1 && sizes[0] != size {
		if ok {
			pkt.DecRef()
		}
		l.fail("dequeue: Peek saw %d packets (%d bytes), Dequeue sent %v (%d bytes)", peeked, sizes[0], ok, size)
	}
	if ok != (mp != nil) {
		if ok {
			pkt.DecRef()
		}
		l.fail("dequeue: core sent %v, model %v", ok, mp != nil)
	}
	if ok {
		l.departed++
		// A whole packet's length is the one both were given (the
		// tins' byte counts check that they charged it alike); a
		// segment's is its bytes.
		mlen := l.sizes[mp.ID]
		if l.split[mp.ID] {
			mlen = uint32(mp.MacLen + len(mp.Data))
		}
		bytes := append(append(append([]byte{}, pkt.NetworkHeader().Slice()...), pkt.TransportHeader().Slice()...), pkt.Data().AsRange().ToSlice()...)
		id, known := l.ids[pkt]
		// Give back the references before any comparison can stop the
		// test.
		if known {
			delete(l.ids, pkt)
			delete(l.held, id)
			pkt.DecRef() // the harness's
		}
		pkt.DecRef() // the one Dequeue handed over
		l.logf("dequeue id %d/%d seg %d, %d bytes", id, mp.ID, mp.Seg, size)
		switch {
		case size != mlen:
			l.fail("dequeue: core sent %d bytes (id %d), model %d (id %d seg %d)", size, id, mlen, mp.ID, mp.Seg)
		case l.split[mp.ID]:
			if known {
				l.fail("dequeue: core sent id %d whole, model a segment %d of %d", id, mp.Seg, mp.ID)
			}
			if n := dsLen(mp.Data); n > len(bytes) || !slices.Equal(bytes[:n], mp.Data[:n]) {
				l.fail("dequeue: segment of %d: DS field %x, model %x", mp.ID, bytes[:min(n, len(bytes))], mp.Data[:n])
			}
		case !known || id != mp.ID:
			l.fail("dequeue: core sent id %d (known %v), model id %d", id, known, mp.ID)
		case !slices.Equal(bytes, mp.Data):
			l.fail("dequeue: id %d bytes differ (CE or wash):\ncore  %x\nmodel %x", id, bytes[:min(len(bytes), 48)], mp.Data[:min(len(mp.Data), 48)])
		}
	}
	l.compareDrops("dequeue", ev)
	l.compareState("dequeue")
	return ok
}

// dsLen is how many bytes at the start of a network header hold its DS
// field.
func dsLen(b []byte) int {
	if len(b) > 0 && b[0]>>4 == 6 {
		return 2
	}
	return min(len(b), 2)
}

// compareState compares the counters both sides show.
func (l *lockstep) compareState(op string) {
	l.t.Helper()
	ms := l.model.Stats()
	cx := l.core.XStats()
	n, bytes := l.core.Len()
	if uint32(n) != ms.BacklogPackets || uint32(bytes) != ms.BacklogBytes {
		l.fail("%s: core holds %d packets, %d bytes; model %d, %d", op, n, bytes, ms.BacklogPackets, ms.BacklogBytes)
	}
	if l.core.Drops() != ms.Drops || l.core.Overlimits() != ms.Overlimits {
		l.fail("%s: core drops %d overlimits %d; model %d %d", op, l.core.Drops(), l.core.Overlimits(), ms.Drops, ms.Overlimits)
	}
	if cx.MemoryLimit != uint64(ms.MemoryLimit) || cx.CapacityEstimate != ms.CapacityEstimate || cx.MaxNetLen != uint32(ms.MaxNetLen) || cx.MaxAdjLen != uint32(ms.MaxAdjLen) || cx.AvgNetOff != ms.AvgNetOff {
		l.fail("%s: core limit %d estimate %d max net %d adj %d netoff %d; model %d %d %d %d %d", op, cx.MemoryLimit, cx.CapacityEstimate, cx.MaxNetLen, cx.MaxAdjLen, cx.AvgNetOff, ms.MemoryLimit, ms.CapacityEstimate, ms.MaxNetLen, ms.MaxAdjLen, ms.AvgNetOff)
	}
	if len(cx.Tins) != len(ms.Tins) {
		l.fail("%s: core has %d tins, model %d", op, len(cx.Tins), len(ms.Tins))
	}
	for i, c := range cx.Tins {
		m := ms.Tins[i]
		mine := caketest.TinStats{
			Tin: m.Tin, ThreshRate: c.ThresholdRate, TargetUS: c.TargetUS, IntervalUS: c.IntervalUS,
			PeakDelayUS: c.PeakDelayUS, AvgDelayUS: c.AvgDelayUS, BaseDelayUS: c.BaseDelayUS,
			BacklogBytes: c.BacklogBytes, Packets: c.SentPackets, Bytes: c.SentBytes,
			WayIndirectHits: c.WayIndirectHits, WayMisses: c.WayMisses, WayCollisions: c.WayCollisions,
			SparseFlows: c.SparseFlows, BulkFlows: c.BulkFlows, UnresponsiveFlows: c.UnresponsiveFlows,
			MaxSkbLen: c.MaxSkbLen, FlowQuantum: c.FlowQuantum, Drops: c.Drops, Marks: c.ECNMarks, AckDrops: c.AckDrops,
		}
		if mine != m {
			l.fail("%s: tin %d:\ncore  %+v\nmodel %+v", op, i, mine, m)
		}
	}
}

// drain dequeues on both until neither sends; when packets wait on the
// shaper, the core's NextEvent must be the model's watchdog.
func (l *lockstep) drain() {
	l.t.Helper()
	for l.dequeue() {
	}
	if n, _ := l.core.Len(); n > 0 {
		if l.model.NextTime() < 0 {
			l.fail("model holds packets with no watchdog")
		}
		if ne := l.core.NextEvent(); ne != l.model.NextTime() {
			l.fail("core's next event %d, model's watchdog %d", ne, l.model.NextTime())
		}
	}
}

// run steps the clock through arrivals (in time order) and the shaper's
// wake-ups until everything has left or until end, both in ns from
// lockstepStart.
func (l *lockstep) run(arrivals []arrival, end int64) {
	l.t.Helper()
	arrivals = slices.Clone(arrivals)
	for k := range arrivals {
		arrivals[k].at += lockstepStart
	}
	end += lockstepStart
	slices.SortStableFunc(arrivals, func(a, b arrival) int { return int(min(max(a.at-b.at, -1), 1)) })
	i := 0
	for steps := 0; ; steps++ {
		if steps > 1_000_000 {
			l.fail("no end after %d steps", steps)
		}
		next := int64(-1)
		if i < len(arrivals) {
			next = arrivals[i].at
		}
		if n, _ := l.core.Len(); n > 0 {
			w := max(l.model.NextTime(), l.now)
			if next < 0 || w < next {
				next = w
				l.waits++
			}
		}
		if next < 0 || next > end {
			break
		}
		l.now = max(l.now, next)
		for i < len(arrivals) && arrivals[i].at <= l.now {
			if c := arrivals[i].change; c != nil {
				l.change(*c)
			} else {
				l.enqueue(arrivals[i])
			}
			l.drain()
			i++
		}
		l.drain()
	}
	l.checkConservation()
}

// checkConservation: every packet (segment) queued has left, been
// dropped, or is still queued.
func (l *lockstep) checkConservation() {
	l.t.Helper()
	n, _ := l.core.Len()
	if l.enqueued != l.departed+l.core.Drops()+uint64(n) {
		l.fail("%d packets queued, %d left, %d dropped, %d held", l.enqueued, l.departed, l.core.Drops(), n)
	}
	checkInvariants(l.t, l.core)
	if l.core.bufferUsed > l.core.bufferLimit {
		l.fail("memory %d over the limit %d", l.core.bufferUsed, l.core.bufferLimit)
	}
}

// ---- traffic ----

// bulk returns n packets of a flow, one every gap ns from start.
func bulk(p pk, n int, start, gap int64) []arrival {
	var out []arrival
	for k := range n {
		q := p
		q.seq = uint64(k)
		out = append(out, arrival{at: start + int64(k)*gap, p: q})
	}
	return out
}

// hostFlows: host A (src 1) sends 1 flow, host B (src 2) 10, all to
// server dst 1, each flow a packet of 1000 bytes every gap.
func hostFlows(n int, gap int64) []arrival {
	var out []arrival
	out = append(out, bulk(pk{src: 1, dst: 1, sport: 1000, dport: 80, payload: 1000, proto: 17}, n, 0, gap)...)
	for f := range 10 {
		out = append(out, bulk(pk{src: 2, dst: 1 + uint16(f%3), sport: 2000 + uint16(f), dport: 80, payload: 1000, proto: 17}, n, int64(f), gap)...)
	}
	return out
}

func cfgWith(f func(*Config)) Config {
	c := DefaultConfig()
	c.Bandwidth = 1_250_000 // 10 Mbit/s
	f(&c)
	return c
}

func mustParse(t testing.TB, words string) Config {
	c, err := ParseQdisc(words)
	if err != nil {
		t.Fatalf("ParseQdisc(%q): %v", words, err)
	}
	return c
}

type lockstepCase struct {
	name    string
	cfg     Config
	traffic []arrival
	end     int64
	peek    bool
	// want checks what the case is for happened (so that it exercises
	// its feature), on the core's statistics.
	want func(x XStats, s *Sched) string
}

func ms(n int64) int64 { return n * 1e6 }

// TestLockstep runs the core and the model side by side (the harness
// above) through cases for every feature: each isolation mode under
// hosts' flows, a server's flows, every diffserv mode with and without
// wash, COBALT, BLUE, the overflow heap, the ACK filter's rules, the
// overhead keywords, split-gso, received packets, ingress, unlimited,
// autorate and changes in place. The long run (qdisctest.Long) offers
// each flow of the isolation and server cases 300 packets over 2 s, and
// the change cases 3 s of traffic; by default 60 packets over 0.5 s and
// 1 s, the same overload and the same changes in a shorter run (the
// harness's drop check scans every queued packet after every call, so
// these cases took 54 of the 65 s under -race). The other cases run in
// full either way.
func TestLockstep(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	flowPkts, flowEnd, changeSpan := 300, ms(2000), ms(3000)
	if !qdisctest.Long() {
		flowPkts, flowEnd, changeSpan = 60, ms(500), ms(1000)
	}
	var cases []lockstepCase
	for iso := range numIsolation {
		cases = append(cases, lockstepCase{
			name:    "isolation/" + iso.String(),
			cfg:     cfgWith(func(c *Config) { c.Isolation = iso; c.Diffserv = BestEffort }),
			traffic: hostFlows(flowPkts, ms(1)), // 11 Mbyte/s offered to 1.25
			end:     flowEnd,
			want: func(x XStats, s *Sched) string {
				if x.Tins[0].Drops == 0 {
					return "no drops under overload"
				}
				return ""
			},
		})
	}
	// A server: one source, 1 flow to client A and 10 to client B
	// (TestServerFairness, e2e's TestCakeHostFairness), in the modes that
	// differ there.
	var server []arrival
	server = append(server, bulk(pk{src: 1, dst: 1, sport: 80, dport: 1000, payload: 1000, proto: 17}, flowPkts, 0, ms(1))...)
	for f := range 10 {
		server = append(server, bulk(pk{src: 1, dst: 2, sport: 80, dport: 2000 + uint16(f), payload: 1000, proto: 17}, flowPkts, int64(f), ms(1))...)
	}
	for _, iso := range []Isolation{TripleIsolate, DualDstHost} {
		cases = append(cases, lockstepCase{
			name: "server/" + iso.String(), cfg: cfgWith(func(c *Config) { c.Isolation = iso; c.Diffserv = BestEffort }),
			traffic: server, end: flowEnd,
		})
	}
	// Mixed DSCP: every class point, ECT(0) and not, in four flows.
	dscps := []uint8{0, 8, 10, 18, 26, 34, 46, 48, 56, 1, 4, 40, 44}
	mixed := func() []arrival {
		var out []arrival
		for k := range 400 {
			d := dscps[k%len(dscps)]
			out = append(out, arrival{at: int64(k) * 200_000, p: pk{src: uint16(1 + k%4), dst: 9, sport: uint16(100 + k%4), dport: 53, proto: 17, payload: 600 + k%5*100, tos: d<<2 | uint8(k%2)*2, seq: uint64(k), v6: k%3 == 0}})
		}
		return out
	}
	for _, ds := range []Diffserv{Diffserv3, Diffserv4, Diffserv8, Precedence, BestEffort} {
		for _, wash := range []bool{false, true} {
			cases = append(cases, lockstepCase{
				name:    fmt.Sprintf("tins/%v/wash=%v", ds, wash),
				cfg:     cfgWith(func(c *Config) { c.Diffserv = ds; c.Wash = wash; c.Bandwidth = 500_000 }),
				traffic: mixed(), end: ms(3000),
				want: func(x XStats, s *Sched) string {
					used := 0
					for _, tn := range x.Tins {
						if tn.SentPackets > 0 {
							used++
						}
					}
					if ds != BestEffort && used < 2 {
						return "fewer than 2 tins used"
					}
					return ""
				},
			})
		}
	}
	// COBALT on a standing queue: one flow sending 2x the rate, ECN-capable
	// or not.
	for _, ecn := range []bool{false, true} {
		tos := uint8(0)
		if ecn {
			tos = 2
		}
		cases = append(cases, lockstepCase{
			name: fmt.Sprintf("cobalt/ecn=%v", ecn),
			cfg:  cfgWith(func(c *Config) { c.Diffserv = BestEffort }),
			traffic: append(bulk(pk{src: 1, dst: 2, sport: 1, dport: 2, payload: 1200, tos: tos}, 1500, 0, 500_000),
				bulk(pk{src: 1, dst: 2, sport: 7, dport: 8, payload: 100, proto: 17}, 100, 3, ms(7))...),
			end: ms(3000),
			want: func(x XStats, s *Sched) string {
				if ecn && x.Tins[0].ECNMarks == 0 || !ecn && x.Tins[0].Drops == 0 {
					return "COBALT neither marked nor dropped"
				}
				return ""
			},
		})
	}
	// COBALT at an rtt of 10s (target 500ms): one flow sending 2x the
	// rate for 6s. The control law takes the 10s interval modulo 2^32 ns
	// (1.41s), as Linux's reciprocal_scale does: the first drop comes
	// about 2.4s in, where the whole interval would put it past the end.
	cases = append(cases, lockstepCase{
		name: "cobalt/rtt=10s",
		cfg: cfgWith(func(c *Config) {
			c.Diffserv = BestEffort
			c.Bandwidth = 125_000
			c.RTT, c.Target = 10*time.Second, 500*time.Millisecond
		}),
		traffic: bulk(pk{src: 1, dst: 2, sport: 1, dport: 2, payload: 1200}, 1250, 0, 4_800_000),
		end:     ms(8000),
		want: func(x XStats, s *Sched) string {
			if x.Tins[0].Drops == 0 {
				return "COBALT did not drop within 8s"
			}
			return ""
		},
	})
	// BLUE: an unresponsive UDP flood past a small memlimit, with a thin
	// TCP flow beside it.
	for _, ingress := range []bool{false, true} {
		cases = append(cases, lockstepCase{
			name: fmt.Sprintf("blue/ingress=%v", ingress),
			cfg:  cfgWith(func(c *Config) { c.Memlimit = MinMemlimit; c.Ingress = ingress }),
			traffic: append(append(bulk(pk{src: 5, dst: 6, sport: 9, dport: 9, proto: 17, payload: 1400}, 4000, 0, 100_000),
				bulk(pk{src: 5, dst: 6, sport: 10, dport: 10, proto: 17, payload: 1400}, 2000, 50_000, 200_000)...),
				bulk(pk{src: 7, dst: 6, sport: 1, dport: 2, payload: 200}, 200, 1, ms(2))...),
			end: ms(2000),
			want: func(x XStats, s *Sched) string {
				if s.tins[0].dropOverlimit == 0 { // diffserv3's best effort
					return "no overflow drops"
				}
				return ""
			},
		})
	}
	// The memory limit under a flood from many hosts, in three tins: the
	// overflow heap's drops (where Linux's heap would go wrong; the model
	// runs with TrueHeap, see paramsOf).
	var many []arrival
	for k := range 6000 {
		h := uint16(k*7919%97 + 1)
		many = append(many, arrival{at: int64(k) * 20_000, p: pk{src: h, dst: h % 5, sport: h, dport: 53, proto: 17, payload: 100 + int(h)*13, tos: uint8(k%3) * 32, seq: uint64(k)}})
	}
	cases = append(cases, lockstepCase{
		name: "overflow/many-hosts", cfg: cfgWith(func(c *Config) { c.Memlimit = MinMemlimit }), traffic: many, end: ms(2000),
		want: func(x XStats, s *Sched) string {
			for _, b := range s.tins {
				if b.dropOverlimit > 0 {
					return ""
				}
			}
			return "no overflow drops"
		},
	})
	cases = append(cases, ackCases()...)
	// Overhead keywords.
	for _, words := range []string{
		"bandwidth 2Mbit atm overhead 44 mpu 96",
		"bandwidth 2Mbit ptm overhead 30",
		"bandwidth 2Mbit ethernet",
		"bandwidth 2Mbit docsis",
		"bandwidth 2Mbit pppoe-vcmux",
		"bandwidth 2Mbit bridged-ptm",
		"bandwidth 2Mbit conservative",
		"bandwidth 2Mbit overhead -20 mpu 64 noatm",
		"bandwidth 2Mbit raw overhead 10",
	} {
		cases = append(cases, lockstepCase{
			name: "overhead/" + words,
			cfg:  mustParse(t, words),
			traffic: append(bulk(pk{src: 1, dst: 2, sport: 1, dport: 2, payload: 1200, link: 14}, 300, 0, ms(1)),
				bulk(pk{src: 3, dst: 2, sport: 1, dport: 2, payload: 20, link: 14, proto: 17}, 300, 7, ms(1))...),
			end: ms(3000),
		})
	}
	// split-gso on and off with host-GSO TCP packets.
	for _, split := range []bool{false, true} {
		var tr []arrival
		for k := range 60 {
			tr = append(tr, arrival{at: int64(k) * ms(2), p: pk{src: 1, dst: 2, sport: 1, dport: 2, payload: 5000 + k*10, link: 14, seq: uint64(k)}, gsoMSS: 1448})
			tr = append(tr, arrival{at: int64(k)*ms(2) + 1, p: pk{src: 3, dst: 2, sport: 3, dport: 2, payload: 300, link: 14, seq: uint64(k), proto: 17}})
		}
		cases = append(cases, lockstepCase{
			name:    fmt.Sprintf("split-gso=%v", split),
			cfg:     cfgWith(func(c *Config) { c.SplitGSO = split; c.Raw = false; c.Overhead = 18 }),
			traffic: tr, end: ms(3000),
		})
	}
	// Received packets (headers in the data, not parsed), Not-ECT and
	// without wash: the core reads them where the model does. (It
	// neither washes nor marks them: a documented deviation.)
	var rx []arrival
	for k := range 400 {
		rx = append(rx, arrival{at: int64(k) * 400_000, p: pk{notParsed: true, v6: k%4 == 0, src: uint16(k % 3), dst: 1, sport: uint16(k % 5), dport: 80, payload: 900, tos: uint8(k%7) << 3, seq: uint64(k)}})
		rx = append(rx, arrival{at: int64(k)*400_000 + 1, p: pk{notParsed: true, src: 1, dst: 2, sport: 80, dport: 5000, ack: uint32(k * 100), seq: uint64(k)}})
	}
	cases = append(cases, lockstepCase{name: "received", cfg: cfgWith(func(c *Config) { c.AckFilter = AckFilterAggressive; c.Diffserv = Diffserv4; c.Ingress = true }), traffic: rx, end: ms(3000)})
	// Ingress mode and unlimited mode, over the mixed traffic and a
	// flood.
	flood := append(mixed(), hostFlows(100, ms(1))...)
	cases = append(cases,
		lockstepCase{name: "ingress", cfg: cfgWith(func(c *Config) { c.Ingress = true; c.Diffserv = Diffserv4 }), traffic: flood, end: ms(3000)},
		lockstepCase{name: "ingress/peek", cfg: cfgWith(func(c *Config) { c.Ingress = true; c.Diffserv = Diffserv4 }), traffic: flood, end: ms(3000), peek: true},
		lockstepCase{name: "unlimited", cfg: cfgWith(func(c *Config) { c.Bandwidth = 0; c.Diffserv = Diffserv8 }), traffic: flood, end: ms(3000)},
		lockstepCase{name: "autorate", cfg: cfgWith(func(c *Config) { c.Autorate = true; c.Ingress = true }), traffic: flood, end: ms(3000)},
	)
	cases = append(cases, changeCases(mixed, changeSpan)...)
	var mu sync.Mutex // guards ackDrops: the cases run side by side
	ackDrops := map[AckFilter]uint32{}
	// The cases run in parallel, each with its own qdisc and model, in a
	// group that returns when the last is done (both cores under -race).
	t.Run("cases", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				l := newLockstep(t, tc.cfg, 7)
				l.peek = tc.peek
				tc.traffic = slices.Clone(tc.traffic)
				l.run(tc.traffic, tc.end)
				if tc.cfg.AckFilter != NoAckFilter {
					mu.Lock()
					for _, tn := range l.core.XStats().Tins {
						ackDrops[tc.cfg.AckFilter] += tn.AckDrops
					}
					mu.Unlock()
				}
				if tc.want != nil {
					if msg := tc.want(l.core.XStats(), l.core); msg != "" {
						t.Errorf("the case did not exercise its feature: %s", msg)
					}
				}
			})
		}
	})
	// Over every ACK case run (all, unless -run picked some).
	_, ranOn := ackDrops[AckFilterOn]
	if _, ran := ackDrops[AckFilterAggressive]; ran && ranOn && (ackDrops[AckFilterOn] == 0 || ackDrops[AckFilterAggressive] <= ackDrops[AckFilterOn]) {
		t.Errorf("ACK drops %v: want some in each mode, more when aggressive", ackDrops)
	}
}

// changeCases are cake_change mid-run, under span ns of traffic (hosts'
// flows at 1.8 times 10 Mbit/s, mixed DSCP and a TCP download's ACKs):
// the bandwidth down, up, to unlimited and back (tc qdisc change ...
// cake bandwidth, runsc qdisc change); more tins, another isolation
// mode, the ACK filter and an overhead keyword at once; a shorter rtt and
// a smaller memory limit. The changes come at the same fractions of span
// (in 30ths): 3 s in the long run, 1 s by default. (Fewer tins while
// the tins they lack hold packets is refused by the core, where Linux
// drops those packets: not in lockstep.)
func changeCases(mixed func() []arrival, span int64) []lockstepCase {
	at := func(thirtieths int64, c Config) arrival { return arrival{at: span * thirtieths / 30, change: &c} }
	n := int(span / ms(5))
	flood := hostFlows(n, ms(5))
	for i, a := range mixed() {
		if a.at = int64(i) * ms(7); a.at < span {
			flood = append(flood, a)
		}
	}
	for k := range n {
		flood = append(flood, arrival{at: int64(k)*ms(5) + 3, p: pk{src: 1, dst: 2, sport: 80, dport: 5000, ack: uint32(k * 1448), seq: uint64(k)}})
	}
	base := cfgWith(func(c *Config) {})
	rates := []arrival{
		at(7, cfgWith(func(c *Config) { c.Bandwidth = 250_000 })),
		at(14, cfgWith(func(c *Config) { c.Bandwidth = 5_000_000 })),
		at(21, cfgWith(func(c *Config) { c.Bandwidth = 0 })),
		at(25, cfgWith(func(c *Config) { c.Bandwidth = 625_000 })),
	}
	be := cfgWith(func(c *Config) { c.Diffserv = BestEffort })
	modes := []arrival{
		at(8, cfgWith(func(c *Config) { c.Diffserv = Diffserv4; c.Isolation = DualDstHost })),
		at(16, cfgWith(func(c *Config) {
			c.Diffserv, c.Isolation, c.AckFilter = Diffserv8, Flows, AckFilterOn
			c.Raw, c.Overhead, c.MPU = false, 38, 84 // ethernet
		})),
	}
	tuning := []arrival{
		at(9, cfgWith(func(c *Config) { c.RTT, c.Target = 10*time.Millisecond, 500*time.Microsecond })),
		at(18, cfgWith(func(c *Config) {
			c.RTT, c.Target = 10*time.Millisecond, 500*time.Microsecond
			c.Memlimit = MinMemlimit
		})),
	}
	return []lockstepCase{
		{name: "change/bandwidth", cfg: base, traffic: append(slices.Clone(flood), rates...), end: span,
			want: changed(625_000)},
		{name: "change/modes", cfg: be, traffic: append(slices.Clone(flood), modes...), end: span,
			want: changed(1_250_000)},
		{name: "change/rtt-memlimit", cfg: base, traffic: append(slices.Clone(flood), tuning...), end: span,
			want: changed(1_250_000)},
	}
}

// changed checks that a change case ended at the configuration its last
// change set, bandwidth bw, having sent packets after it.
func changed(bw uint64) func(x XStats, s *Sched) string {
	return func(x XStats, s *Sched) string {
		if s.cfg.Bandwidth != bw {
			return fmt.Sprintf("bandwidth %d after the changes, want %d", s.cfg.Bandwidth, bw)
		}
		return ""
	}
}

// ackCases are the ACK filter's rules case by case, conservative and
// aggressive: each a sequence of ACKs of one flow queued behind a
// stalled shaper (so that the filter sees them together).
func ackCases() []lockstepCase {
	ts := func(val, ecr uint32) []byte {
		return []byte{1, 1, 8, 10, byte(val >> 24), byte(val >> 16), byte(val >> 8), byte(val), byte(ecr >> 24), byte(ecr >> 16), byte(ecr >> 8), byte(ecr)}
	}
	sack := func(l, r uint32) []byte {
		return []byte{1, 1, 5, 10, byte(l >> 24), byte(l >> 16), byte(l >> 8), byte(l), byte(r >> 24), byte(r >> 16), byte(r >> 8), byte(r)}
	}
	md5 := append([]byte{19, 18}, make([]byte, 16)...)
	ack := func(a uint32, opts []byte) pk {
		return pk{src: 1, dst: 2, sport: 80, dport: 5000, ack: a, opts: opts, flags: header.TCPFlagAck}
	}
	type seq []pk
	rules := []struct {
		name string
		acks seq
	}{
		{"plain-later-ack", seq{ack(100, nil), ack(200, nil), ack(300, nil)}},
		{"same-ack", seq{ack(100, nil), ack(100, nil)}},
		{"older-ack-after", seq{ack(300, nil), ack(200, nil)}},
		{"timestamps", seq{ack(100, ts(10, 5)), ack(200, ts(11, 5)), ack(300, ts(9, 5))}},
		{"sack-grows", seq{ack(100, sack(200, 300)), ack(100, sack(200, 400))}},
		{"sack-shrinks", seq{ack(100, sack(200, 400)), ack(100, sack(200, 300))}},
		{"sack-then-plain", seq{ack(100, sack(200, 300)), ack(400, nil)}},
		{"syn", seq{{src: 1, dst: 2, sport: 80, dport: 5000, flags: header.TCPFlagSyn | header.TCPFlagAck, ack: 1}, ack(100, nil)}},
		{"fin", seq{ack(100, nil), {src: 1, dst: 2, sport: 80, dport: 5000, flags: header.TCPFlagFin | header.TCPFlagAck, ack: 200}, ack(300, nil)}},
		{"rst", seq{{src: 1, dst: 2, sport: 80, dport: 5000, flags: header.TCPFlagRst | header.TCPFlagAck, ack: 100}, ack(300, nil)}},
		{"ece-cwr", seq{{src: 1, dst: 2, sport: 80, dport: 5000, flags: header.TCPFlagEce | header.TCPFlagAck, ack: 100}, ack(300, nil), {src: 1, dst: 2, sport: 80, dport: 5000, flags: header.TCPFlagCwr | header.TCPFlagAck, ack: 400}}},
		{"data", seq{{src: 1, dst: 2, sport: 80, dport: 5000, flags: header.TCPFlagAck, ack: 100, payload: 50}, ack(300, nil), ack(400, nil)}},
		{"unknown-option", seq{ack(100, []byte{30, 4, 0, 0}), ack(200, nil)}},
		{"mss-option", seq{ack(100, []byte{2, 4, 5, 0xb4}), ack(200, nil)}},
		{"wscale", seq{ack(100, []byte{1, 3, 3, 7}), ack(200, nil)}},
		{"v6", seq{{v6: true, src: 1, dst: 2, sport: 80, dport: 5000, ack: 100}, {v6: true, src: 1, dst: 2, sport: 80, dport: 5000, ack: 200}}},
		{"other-flow", seq{ack(100, nil), {src: 1, dst: 2, sport: 81, dport: 5000, ack: 200}, ack(300, nil)}},
		{"ecn-ect", seq{{src: 1, dst: 2, sport: 80, dport: 5000, ack: 100, tos: 2}, {src: 1, dst: 2, sport: 80, dport: 5000, ack: 200, tos: 1}}},
		{"psh", seq{{src: 1, dst: 2, sport: 80, dport: 5000, flags: header.TCPFlagAck | header.TCPFlagPsh, ack: 100}, ack(200, nil)}},
		// The ACK dropped is longer (its MD5 option) than the one that
		// replaces it: the tin's byte count takes a negative difference
		// (found by FuzzCakeLockstep).
		{"longer-ack-dropped", seq{ack(100, append(ts(10, 5), md5...)), ack(200, append(ts(10, 5), md5...)), ack(300, ts(11, 5))}},
		{"urg", seq{{src: 1, dst: 2, sport: 80, dport: 5000, flags: header.TCPFlagAck | header.TCPFlagUrg, ack: 100}, ack(200, nil)}},
	}
	var out []lockstepCase
	for _, mode := range []AckFilter{AckFilterOn, AckFilterAggressive} {
		// A reverse-path ACK stream (timestamps, an occasional SACK)
		// beside a bulk flow on a slow link: the filter thins it.
		var tr []arrival
		for k := range 600 {
			var opts []byte
			if k%7 == 3 {
				opts = append(ts(uint32(k), 1), sack(uint32(k*1000+3000), uint32(k*1000+4000))...)
			} else {
				opts = ts(uint32(k), 1)
			}
			tr = append(tr, arrival{at: int64(k) * 300_000, p: pk{src: 1, dst: 2, sport: 80, dport: 5000, ack: uint32(k * 1000), opts: opts, seq: uint64(k)}})
			tr = append(tr, arrival{at: int64(k)*300_000 + 1, p: pk{src: 1, dst: 2, sport: 81, dport: 5001, payload: 1000, seq: uint64(k)}})
		}
		out = append(out, lockstepCase{
			name: fmt.Sprintf("ack/%v/stream", mode), cfg: cfgWith(func(c *Config) { c.AckFilter = mode; c.Bandwidth = 1_000_000 }),
			traffic: tr, end: ms(3000),
			want: func(x XStats, s *Sched) string {
				for _, tn := range x.Tins {
					if tn.AckDrops > 0 {
						return ""
					}
				}
				return "no ACK dropped"
			},
		})
		for _, r := range rules {
			// A big packet first stalls the shaper, so the ACKs queue.
			tr := []arrival{{at: 0, p: pk{src: 1, dst: 2, sport: 80, dport: 5000, payload: 1400, proto: 17}}}
			for k, p := range r.acks {
				p.seq = uint64(k)
				tr = append(tr, arrival{at: int64(k + 1), p: p})
			}
			out = append(out, lockstepCase{
				name:    fmt.Sprintf("ack/%v/%s", mode, r.name),
				cfg:     cfgWith(func(c *Config) { c.AckFilter = mode; c.Bandwidth = 10_000 }),
				traffic: tr, end: ms(5000),
			})
		}
	}
	return out
}
