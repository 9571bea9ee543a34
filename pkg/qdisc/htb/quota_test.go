package htb

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// sendAll keeps class backlogged with 1000-byte packets and dequeues as
// the tree allows until end, returning each packet's departure time.
func sendAll(t *testing.T, tr *Tree, class uint32, from, end int64) []int64 {
	t.Helper()
	var at []int64
	seq := uint64(0)
	for now := from; now < end; {
		for tr.byID[class].leafPackets < 4 {
			seq++
			tr.Enqueue(qdisctest.MakePacket(1000, 0, uint64(class)<<32|seq), 1000, now)
		}
		pkt, _, ok := tr.Dequeue(now)
		if !ok {
			now = tr.NextEvent()
			continue
		}
		at = append(at, now)
		pkt.DecRef()
	}
	return at
}

// TestQuota holds a quota's cut-over to the packet that reaches the
// budget, the class and the classes under it falling to the quota's rate
// (or stopping), and the renewal at the period's end.
func TestQuota(t *testing.T) {
	const mbit = 125_000
	for _, tc := range []struct {
		name string
		fall uint64
		// gap is the time between packets once the quota is spent (0:
		// none leaves).
		gap int64
	}{
		{"falls to 1 Mbit/s", mbit, 8_000_000},
		{"blocks", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &Quota{Bytes: 10_000, Period: time.Second, Rate: tc.fall}
			tr, err := NewTree(Config{Default: 0x10010, Classes: []ClassConfig{
				{ID: 0x10001, Rate: 100 * mbit, Quota: q},
				{ID: 0x10010, Parent: 0x10001, Rate: 100 * mbit},
			}}, bySeq{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Purge()
			at := sendAll(t, tr, 0x10010, 0, int64(900*time.Millisecond))
			// 10 packets at 100 Mbit/s (80 µs each), the 10th reaching the
			// budget; then the fall.
			if len(at) < 10 || at[9] > 1_000_000 {
				t.Fatalf("the budget's 10 packets did not leave at the class's rate: %v", at)
			}
			if tc.gap == 0 {
				if len(at) != 10 {
					t.Fatalf("%d packets left, want the budget's 10 and then none: %v", len(at), at)
				}
			} else {
				for i := 11; i < len(at); i++ {
					if d := at[i] - at[i-1]; d != tc.gap {
						t.Fatalf("after the budget, packets %d and %d left %d ns apart, want %d", i-1, i, d, tc.gap)
					}
				}
			}
			st := tr.Classes()[0]
			if !st.QuotaSpent || st.QuotaUsed < 10_000 {
				t.Errorf("quota shows used %d spent %v, want >= 10000 and spent", st.QuotaUsed, st.QuotaSpent)
			}
			// The period renews at 1 s: the class sends at its own rate
			// again, once the debt (in ns, kept across a change of rate, as
			// htb_change_class keeps it) of the packet before is paid.
			at = sendAll(t, tr, 0x10010, int64(900*time.Millisecond), int64(time.Second+2*time.Millisecond))
			var after []int64
			for _, a := range at {
				if a >= int64(time.Second) {
					after = append(after, a)
				}
			}
			if len(after) < 10 {
				t.Fatalf("%d packets in the 2 ms after the renewal, want the class's rate again (>= 10): %v", len(after), at)
			}
			if tc.gap == 0 && after[0] != int64(time.Second) {
				t.Errorf("the blocked class sent first at %d after its renewal, want at 1 s", after[0])
			}
		})
	}
}

// TestQuotaRestore: a tree made from a checkpoint's quota counters goes on
// where the old one was: a spent budget stays spent until its period ends.
func TestQuotaRestore(t *testing.T) {
	const mbit = 125_000
	cfg := Config{Default: 0x10010, Classes: []ClassConfig{
		{ID: 0x10010, Rate: 100 * mbit, Quota: &Quota{Bytes: 5_000, Period: time.Second}},
	}}
	old, err := NewTree(cfg, bySeq{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sendAll(t, old, 0x10010, 0, int64(10*time.Millisecond))
	old.Purge()
	saved := old.Quotas()
	if len(saved) != 1 || saved[0].Used != 5_000 {
		t.Fatalf("saved %+v, want class 1:10 with 5000 bytes used", saved)
	}
	// Restored on another clock, at 5 s.
	tr, err := NewTree(cfg, bySeq{}, int64(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Purge()
	if err := tr.RestoreQuotas(saved, int64(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	left := int64(saved[0].Left)
	if at := sendAll(t, tr, 0x10010, int64(5*time.Second), int64(5*time.Second)+left-1); len(at) != 0 {
		t.Fatalf("restored with its budget spent, the class sent %d packets before its period ended", len(at))
	}
	if err := tr.RestoreQuotas([]QuotaState{{ID: 0x10099}}, 0); err == nil {
		t.Error("RestoreQuotas took a class that has no quota")
	}
}

// TestQuotaBoundsSubtree: once an inner class's quota is spent, its
// subtree as a whole sends no more than the quota's rate (plus its
// buckets), however many busy leaves it has and however deep, while a
// class outside it keeps its configured rates; and a renewal gives every
// class its own rates back. (Before the subtree was fitted as a whole,
// each of 8 leaves fell to the quota's rate on its own: 8 Mbit/s through
// a quota of 1.)
func TestQuotaBoundsSubtree(t *testing.T) {
	const (
		mbit   = 125_000
		x      = 0x10001 // the class with the quota
		other  = 0x10002 // a sibling outside it
		top    = 0x10100 // their parent
		budget = 100_000
		fall   = mbit
		secs   = 10
		size   = 1000
	)
	// leaves returns n leaves under parent, numbered from first.
	leaves := func(parent, first uint32, n int, rate, ceil uint64) []ClassConfig {
		var out []ClassConfig
		for i := range n {
			out = append(out, ClassConfig{ID: first + uint32(i), Parent: parent, Rate: rate, Ceil: ceil})
		}
		return out
	}
	quota := &Quota{Bytes: budget, Period: time.Hour, Rate: fall}
	for _, tc := range []struct {
		name    string
		classes []ClassConfig
		// otherRate, if not 0, is the sibling's rate, which it must
		// keep.
		otherRate uint64
	}{
		{"8 leaves within their rates", append([]ClassConfig{{ID: x, Rate: 100 * mbit, Quota: quota}},
			leaves(x, 0x10010, 8, 10*mbit, 10*mbit)...), 0},
		{"8 leaves borrowing up to the class's ceil", append([]ClassConfig{{ID: x, Rate: 10 * mbit, Ceil: 100 * mbit, Quota: quota}},
			leaves(x, 0x10010, 8, mbit, 100*mbit)...), 0},
		{"two levels, uneven rates", append(append([]ClassConfig{
			{ID: x, Rate: 100 * mbit, Quota: quota},
			{ID: 0x10003, Parent: x, Rate: 60 * mbit},
			{ID: 0x10004, Parent: x, Rate: 30 * mbit, Ceil: 100 * mbit}},
			leaves(0x10003, 0x10010, 4, 15*mbit, 60*mbit)...),
			leaves(0x10004, 0x10020, 4, 3*mbit, 100*mbit)...), 0},
		{"a sibling outside keeps its rates", append([]ClassConfig{
			{ID: top, Rate: 200 * mbit},
			{ID: x, Parent: top, Rate: 100 * mbit, Ceil: 200 * mbit, Quota: quota},
			{ID: other, Parent: top, Rate: 50 * mbit}},
			leaves(x, 0x10010, 8, 10*mbit, 100*mbit)...), 50 * mbit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := NewTree(Config{Classes: tc.classes}, bySeq{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Purge()
			var busy []uint32 // the leaves
			under := map[uint32]bool{}
			for _, c := range tc.classes {
				if tr.byID[c.ID].level == 0 {
					busy = append(busy, c.ID)
				}
				if c.ID == x || under[c.Parent] {
					under[c.ID] = true
				}
			}
			// Every leaf backlogged; a departure's time, leaf and size.
			type dep struct {
				at   int64
				leaf uint32
			}
			var deps []dep
			seq := uint64(0)
			spentAt := int64(-1)
			for now := int64(0); spentAt < 0 || now < spentAt+secs*1e9; {
				for _, c := range busy {
					for tr.byID[c].leafPackets < 4 {
						seq++
						tr.Enqueue(qdisctest.MakePacket(size, 0, uint64(c)<<32|seq), size, now)
					}
				}
				pkt, _, ok := tr.Dequeue(now)
				if !ok {
					now = tr.NextEvent()
					continue
				}
				deps = append(deps, dep{now, uint32(qdisctest.Seq(pkt) >> 32)})
				pkt.DecRef()
				if spentAt < 0 && tr.byID[x].quotaSpent {
					spentAt = now
				}
			}
			var got, gotOther uint64
			for _, d := range deps {
				if d.at <= spentAt {
					continue
				}
				if under[d.leaf] {
					got += size
				} else if d.leaf == other {
					gotOther += size
				}
			}
			// What the subtree may send: the fall for 10 s, and the
			// buckets of every class in it (each may be full).
			var buckets uint64
			for c := range under {
				buckets += uint64(tr.byID[c].cfg.Burst) + uint64(tr.byID[c].cfg.CBurst)
			}
			want := uint64(fall * secs)
			t.Logf("after the budget: %.3f Mbit/s through a quota of %.3f", float64(got)*8/secs/1e6, float64(fall)*8/1e6)
			if got > want+buckets+size {
				t.Errorf("the subtree sent %d bytes in %d s after its budget was spent; the quota's rate allows %d (+ %d of buckets)", got, secs, want, buckets)
			}
			if got < want*95/100 {
				t.Errorf("the subtree sent %d bytes in %d s after its budget was spent; want about the quota's %d", got, secs, want)
			}
			// Its leaves' rates in force add up to no more than the fall.
			var sum uint64
			for _, c := range busy {
				if cl := tr.byID[c]; under[c] {
					sum += cl.rate.BytesPerSecond()
					if cl.ceil.BytesPerSecond() > fall {
						t.Errorf("leaf %x: ceil %d in force, above the quota's %d", c, cl.ceil.BytesPerSecond(), fall)
					}
				}
			}
			if sum > fall {
				t.Errorf("the leaves' rates in force add up to %d, above the quota's %d", sum, fall)
			}
			if tc.otherRate != 0 {
				if r := tr.byID[other].rate.BytesPerSecond(); r != tc.otherRate {
					t.Errorf("the sibling's rate in force is %d, want its configured %d", r, tc.otherRate)
				}
				if o := gotOther * 8 / secs; o < tc.otherRate*8*99/100 {
					t.Errorf("the sibling sent %d bit/s, want its rate, %d", o, tc.otherRate*8)
				}
			}
			// A renewal gives every class its configured rates back.
			if err := tr.ResetQuota(x, deps[len(deps)-1].at); err != nil {
				t.Fatal(err)
			}
			for _, cl := range tr.classes {
				if cl.rate.BytesPerSecond() != cl.cfg.Rate || cl.ceil.BytesPerSecond() != cl.cfg.Ceil {
					t.Errorf("class %x after the renewal: rate %d ceil %d in force, want its own %d %d", cl.id, cl.rate.BytesPerSecond(), cl.ceil.BytesPerSecond(), cl.cfg.Rate, cl.cfg.Ceil)
				}
			}
		})
	}
}

// TestQuotaFitFollowsChanges: the fit of a spent quota's subtree follows
// a restored checkpoint, a change of a class under it (its siblings are
// fitted anew), and a change of the quota that unspends it; the class
// statistics keep showing the configured rates and the quota's state.
func TestQuotaFitFollowsChanges(t *testing.T) {
	const mbit = 125_000
	q := &Quota{Bytes: 1000, Period: time.Hour, Rate: mbit}
	tr, err := NewTree(Config{Classes: []ClassConfig{
		{ID: 0x10001, Rate: 100 * mbit, Quota: q},
		{ID: 0x10010, Parent: 0x10001, Rate: 6 * mbit, Ceil: 50 * mbit},
		{ID: 0x10020, Parent: 0x10001, Rate: 2 * mbit},
		{ID: 0x10030, Rate: 7 * mbit},
	}}, bySeq{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Purge()
	type rc struct{ rate, ceil uint64 }
	inForce := func() map[uint32]rc {
		out := map[uint32]rc{}
		for _, cl := range tr.classes {
			out[cl.id] = rc{cl.rate.BytesPerSecond(), cl.ceil.BytesPerSecond()}
		}
		return out
	}
	for _, step := range []struct {
		name string
		do   func() error
		want map[uint32]rc
	}{
		{"restored spent: 6:2 of 1 Mbit/s", func() error {
			return tr.RestoreQuotas([]QuotaState{{ID: 0x10001, Used: 1000, Left: time.Minute}}, 1)
		}, map[uint32]rc{0x10001: {mbit, mbit}, 0x10010: {93_750, mbit}, 0x10020: {31_250, mbit}, 0x10030: {7 * mbit, 7 * mbit}}},
		{"a child changed: its sibling fitted anew", func() error {
			return tr.ChangeClass(ClassConfig{ID: 0x10020, Parent: 0x10001, Rate: 6 * mbit}, 2)
		}, map[uint32]rc{0x10001: {mbit, mbit}, 0x10010: {62_500, mbit}, 0x10020: {62_500, mbit}, 0x10030: {7 * mbit, 7 * mbit}}},
		{"a class outside changed: nothing else moves", func() error {
			return tr.ChangeClass(ClassConfig{ID: 0x10030, Rate: 9 * mbit}, 3)
		}, map[uint32]rc{0x10001: {mbit, mbit}, 0x10010: {62_500, mbit}, 0x10020: {62_500, mbit}, 0x10030: {9 * mbit, 9 * mbit}}},
		{"the budget raised: the configured rates", func() error {
			return tr.ChangeClass(ClassConfig{ID: 0x10001, Rate: 100 * mbit, Quota: &Quota{Bytes: 2000, Period: time.Hour, Rate: mbit}}, 4)
		}, map[uint32]rc{0x10001: {100 * mbit, 100 * mbit}, 0x10010: {6 * mbit, 50 * mbit}, 0x10020: {6 * mbit, 6 * mbit}, 0x10030: {9 * mbit, 9 * mbit}}},
		{"spent again by a reset and a restore", func() error {
			if err := tr.ResetQuota(0x10001, 5); err != nil {
				return err
			}
			return tr.RestoreQuotas([]QuotaState{{ID: 0x10001, Used: 5000, Left: time.Minute}}, 6)
		}, map[uint32]rc{0x10001: {mbit, mbit}, 0x10010: {62_500, mbit}, 0x10020: {62_500, mbit}, 0x10030: {9 * mbit, 9 * mbit}}},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if diff := cmp.Diff(step.want, inForce(), cmp.AllowUnexported(rc{})); diff != "" {
			t.Errorf("%s: rates in force (-want +got):\n%s", step.name, diff)
		}
	}
	st := tr.Classes()
	if st[0].Rate != 100*mbit || !st[0].QuotaSpent || st[1].Rate != 6*mbit || st[1].Ceil != 50*mbit {
		t.Errorf("statistics show %+v and %+v; want the configured rates and the quota spent", st[0], st[1])
	}
}

// TestQuotaRestoreTampered: a checkpoint's quota counters are the
// sandbox's word, so RestoreQuotas holds them to what an honest checkpoint
// of the tree could hold: after a restore the class sends, until its
// restored period ends, no more than its budget left (the whole budget at
// most), however the counters were written; a period that starts in the
// future, a class twice or one without a quota is refused.
func TestQuotaRestoreTampered(t *testing.T) {
	const (
		mbit  = 125_000
		class = 0x10010
		start = int64(5 * time.Second)
	)
	cfg := Config{Default: class, Classes: []ClassConfig{
		{ID: class, Rate: 100 * mbit, Quota: &Quota{Bytes: 5_000, Period: time.Second}},
	}}
	half := 500 * time.Millisecond
	for _, tc := range []struct {
		name   string
		states []QuotaState
		most   int    // packets of 1000 bytes sent before the restored period ends
		err    string // the refusal, "" for none
	}{
		{"honest: 3000 used", []QuotaState{{ID: class, Used: 3000, Left: half}}, 2, ""},
		{"zeroed: the budget, no more", []QuotaState{{ID: class, Used: 0, Left: half}}, 5, ""},
		{"spent past the budget", []QuotaState{{ID: class, Used: 7000, Left: half}}, 0, ""},
		{"wrapped to the top", []QuotaState{{ID: class, Used: math.MaxUint64, Left: half}}, 0, ""},
		{"just below the top", []QuotaState{{ID: class, Used: math.MaxUint64 - 500, Left: half}}, 0, ""},
		{"a period that starts in the future", []QuotaState{{ID: class, Left: 2 * time.Second}}, 0, "has 2s left of a 1s period"},
		{"a negative time left", []QuotaState{{ID: class, Left: -time.Second}}, 0, "left of a 1s period"},
		{"the class twice", []QuotaState{{ID: class, Used: 5000, Left: half}, {ID: class, Left: half}}, 0, "given twice"},
		{"a class without a quota", []QuotaState{{ID: 0x10099, Left: half}}, 0, "which has none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := NewTree(cfg, bySeq{}, start)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Purge()
			err = tr.RestoreQuotas(tc.states, start)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("RestoreQuotas(%+v): %v; want an error saying %q", tc.states, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(sendAll(t, tr, class, start, start+int64(half))); n != tc.most {
				t.Errorf("sent %d packets of 1000 bytes before the restored period ended; want %d", n, tc.most)
			}
		})
	}
}

// TestQuotaCountSaturates: a count restored near the top, on a quota that
// falls to a rate once spent, stays at the top as the class sends: it does
// not wrap back into a budget for the next checkpoint to save.
func TestQuotaCountSaturates(t *testing.T) {
	const mbit = 125_000
	cfg := Config{Default: 0x10010, Classes: []ClassConfig{
		{ID: 0x10010, Rate: 100 * mbit, Quota: &Quota{Bytes: 5_000, Period: time.Hour, Rate: mbit}},
	}}
	tr, err := NewTree(cfg, bySeq{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Purge()
	if err := tr.RestoreQuotas([]QuotaState{{ID: 0x10010, Used: math.MaxUint64 - 500, Left: time.Minute}}, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(sendAll(t, tr, 0x10010, 0, int64(100*time.Millisecond))); n == 0 {
		t.Fatal("the spent class sent nothing at the quota's rate")
	}
	if q := tr.Quotas(); q[0].Used != math.MaxUint64 {
		t.Errorf("used %d after sending; want the count held at %d", q[0].Used, uint64(math.MaxUint64))
	}
}
