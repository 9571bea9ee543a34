package fqcodel_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

// childModel is the fq_codel model as a tbf's child in tbftest's model.
type childModel struct {
	m     *linuxFQCoDel
	hash  func(seq uint64) uint32
	drops int
}

func (c *childModel) Enqueue(now int64, seq uint64, size uint32) bool {
	c.drops += len(c.m.enqueue(mpkt{seq: seq, size: size, mem: size + uint32(stack.PacketBufferStructSize)}, c.hash(seq), now))
	return true
}

func (c *childModel) Peek(now int64) (uint64, uint32, bool) {
	p, dropped := c.m.peek(now)
	c.drops += len(dropped)
	if p == nil {
		return 0, 0, false
	}
	return p.seq, p.size, true
}

func (c *childModel) Dequeue()   { c.m.dequeue(0) }
func (c *childModel) Drops() int { return c.drops }

// tbfShaper is a tbf with fq_codel as the lockstep harness drives it.
type tbfShaper struct{ *tbf.Discipline }

func (d tbfShaper) Write(pkt *stack.PacketBuffer) bool { return d.WritePacket(pkt) == nil }
func (d tbfShaper) Limit() uint32                      { return 0 }

// TestConformanceUnderTBF holds tbf + fq_codel to Linux's tbf with an
// fq_codel child: the tbf charges each packet when fq_codel hands it over
// (tbf_dequeue peeks its child), so the same packets leave, in the same
// order across flows, at the same nanosecond, and the same are dropped (by
// CoDel and at fq_codel's limit).
func TestConformanceUnderTBF(t *testing.T) {
	const mbit = tbftest.Mbit
	for _, tc := range []struct {
		name     string
		cfg      tbf.Config
		fq       fqcodel.Config
		flows    uint64
		arrivals []tbftest.Arrival
	}{
		{"10mbit, 4 flows above the rate: CoDel drops", tbf.Config{Rate: 10 * mbit, Burst: 3028}, fqcodel.Config{}, 4,
			tbftest.Poisson(31, 0, 4000, 600_000, tbftest.Fixed(1514))},
		{"10mbit, a bulk flow and a sparse one, odd sizes", tbf.Config{Rate: 10 * mbit, Burst: 12500}, fqcodel.Config{}, 2,
			tbftest.Concat(tbftest.Backlog(0, 300, tbftest.Odd(32)), tbftest.Poisson(33, 0, 2000, 400_000, tbftest.Odd(34)))},
		{"100mbit, fq_codel's packet limit", tbf.Config{Rate: 100 * mbit, Burst: 3028}, fqcodel.Config{Limit: 50, DropBatch: 4}, 3,
			tbftest.Poisson(35, 0, 3000, 60_000, tbftest.Odd(36))},
		{"1mbit, short target, quantum 300", tbf.Config{Rate: mbit, Burst: 3028}, fqcodel.Config{Target: time.Millisecond, Interval: 20 * time.Millisecond, Quantum: 300}, 5,
			tbftest.Poisson(37, 0, 600, 5_000_000, tbftest.Odd(38))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hash := func(seq uint64) uint32 { return uint32(1 + seq%tc.flows*0x9e3779b1) }
			mk := func(t *testing.T, cfg tbf.Config, clock tcpip.Clock, link *qdisctest.Link) tbftest.Shaper {
				d, err := newTBF(link, clock, cfg, &tc.fq)
				if err != nil {
					t.Fatalf("tbf.New: %v", err)
				}
				t.Cleanup(d.Close)
				return tbfShaper{d}
			}
			// The child's psched_mtu: the link's MTU, 1500, and its
			// 14-byte header.
			child := &childModel{m: newLinuxFQCoDel(tc.fq, 1514), hash: hash}
			ls := tbftest.NewLockstep(t, mk, tc.cfg, 1500, tbftest.WithChildModel(child))
			ls.Run(t, tc.arrivals, hash, func(next int64) {
				if got := ls.Link.NumRecords(); got != len(ls.M.Sent) {
					t.Fatalf("t=%dns: sent %d packets, Linux %d", next-ls.Start, got, len(ls.M.Sent))
				}
				if child.m.unsure != "" {
					t.Fatalf("t=%dns: the model's Newton step may be one off Linux's: %s", next-ls.Start, child.m.unsure)
				}
			})
			recs := ls.Link.Records()
			for k, r := range recs {
				want := ls.M.Sent[k]
				if at := int64(r.At.Sub(tcpip.MonotonicTime{})); r.Seq != want.Seq || at != want.At {
					t.Fatalf("departure %d: packet %d at %dns; Linux: packet %d at %dns", k, r.Seq, at-ls.Start, want.Seq, want.At-ls.Start)
				}
			}
			st := ls.S.Stats()
			x, _ := fqcodel.ChildXStats(ls.S.(tbfShaper))
			t.Logf("%d arrivals: %d sent, %d dropped (%d by CoDel, %d at the limit), %d overlimits", len(tc.arrivals), st.Packets, st.Drops, x.CoDelDrops, x.DropOverlimit, st.Overlimits)
			if st.Drops != uint64(ls.M.AllDrops()) || st.Packets != uint64(len(ls.M.Sent)) || st.BacklogPackets != 0 {
				t.Errorf("stats %+v; Linux: %d sent, %d dropped", st, len(ls.M.Sent), ls.M.AllDrops())
			}
			if st.Drops == 0 {
				t.Errorf("nothing dropped: the case does not exercise fq_codel")
			}
			tbftest.CheckBounds(t, tc.cfg, recs)
		})
	}
}
