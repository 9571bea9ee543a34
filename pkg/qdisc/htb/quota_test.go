package htb

import (
	"testing"
	"time"

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
