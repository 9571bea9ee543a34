package htbtest

import (
	"reflect"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// 125000 B/s sends 1000 bytes in exactly 8 ms; 250000 B/s in 4 ms.
const (
	slow = 125_000
	fast = 250_000
	ms   = int64(1_000_000)
)

// stat is what the hand-computed cases check of a class.
type stat struct {
	tokens, ctokens                            int64
	mode                                       Mode
	packets, overlimits, lends, borrows, drops uint64
}

// times lists each of n packets' departure time, -1 for one not sent.
func times(n int, sent []Departure) []int64 {
	got := make([]int64, n)
	for k := range got {
		got[k] = -1
	}
	for _, d := range sent {
		got[d.Seq] = d.At
	}
	return got
}

func statOf(s ClassStats) stat {
	return stat{s.Tokens, s.CTokens, s.Mode, s.Packets, s.Overlimits, s.Lends, s.Borrows, s.Drops}
}

// TestModelByHand checks the model against departures and token counts
// worked out by hand from sch_htb.c, so that the model is checked by
// something other than the code it checks; and the tree against the same
// departures.
func TestModelByHand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      htb.Config
		arrivals []Arrival
		// sent[k] is packet k's departure time, -1 if dropped.
		sent  []int64
		stats map[uint32]stat
		drops uint64
	}{
		{
			// buffer 16 ms, cost 8 ms: packets go while tokens >= 0, so
			// three leave at once (16 -> 8 -> 0 -> -8 ms, CantSend with
			// the event at 8 ms); then one every 8 ms, each taking the
			// tokens back to -8 ms.
			name:     "one class at its rate",
			cfg:      htb.Config{Classes: []htb.ClassConfig{{ID: 0x10010, Rate: slow, Burst: 2000, CBurst: 2000}}},
			arrivals: Backlog(0, 0x10010, 5, Fixed(1000)),
			sent:     []int64{0, 0, 0, 8 * ms, 16 * ms},
			stats: map[uint32]stat{
				0x10010: {tokens: -8 * ms, ctokens: -8 * ms, mode: CantSend, packets: 5, overlimits: 3, lends: 5},
			},
		},
		{
			// The leaf (rate 8 ms, ceil 4 ms a packet, buffers 8 and 4 ms)
			// sends two at 0 on its own tokens (rate 8 -> 0 -> -8 ms, ceil
			// 4 -> 0 -> -4 ms); it and the parent (rate=ceil 4 ms a
			// packet, buffer 4 ms) are CantSend until 4 ms. Then the leaf
			// may only borrow (tokens -4 ms) and the parent, CanSend at 0
			// tokens, lends it one packet, which takes the leaf's ceil and
			// the parent back to -4 ms. At 8 ms the leaf's own tokens are
			// back to 0: it sends the last at its own level, charging the
			// parent (still CantSend: its event waits at level 7) too.
			name: "a leaf borrows from its parent up to its ceil",
			cfg: htb.Config{Classes: []htb.ClassConfig{
				{ID: 0x10001, Rate: fast, Burst: 1000, CBurst: 1000},
				{ID: 0x10010, Parent: 0x10001, Rate: slow, Ceil: fast, Burst: 1000, CBurst: 1000},
				{ID: 0x10020, Parent: 0x10001, Rate: slow, Ceil: fast, Burst: 1000, CBurst: 1000},
			}},
			arrivals: Backlog(0, 0x10010, 4, Fixed(1000)),
			sent:     []int64{0, 0, 4 * ms, 8 * ms},
			stats: map[uint32]stat{
				0x10001: {tokens: -4 * ms, ctokens: -4 * ms, mode: CantSend, packets: 4, overlimits: 2, lends: 1},
				0x10010: {tokens: -8 * ms, ctokens: -4 * ms, mode: CantSend, packets: 4, overlimits: 3, lends: 3, borrows: 1},
				0x10020: {tokens: 8 * ms, ctokens: 4 * ms, mode: CanSend},
			},
		},
		{
			// Leaves A (1:10, quantum 1000) and B (1:20, quantum 2000)
			// of rate 1000 B/s (1 s a packet, buffer 1 s) and ceil 1 ms
			// a packet (cbuffer 1 ms) under a root of 4 ms a packet
			// (buffer 4 ms). At 0 each sends two at its own rate (A0 A1,
			// then B0 B1), the second taking it to -1 s and its ceil to
			// -1 ms, and the root to -12 ms. From 1 ms both may borrow;
			// the root may lend at 12 ms, then every 4 ms. Level 7's DRR:
			// each deficit starts at 0, so A's and B's first turns end
			// after a packet (A: -1000+1000 = 0, B: -1000+2000 = 1000);
			// then A sends 1 packet a turn, B 2 (1000 -> 0 -> -1000+2000).
			// When B empties at 36 ms the feed's pointer (at B) is lost,
			// its id kept, and the next lookup finds nothing at or after
			// B: it rewinds to A.
			name: "DRR by quantum at level 7",
			cfg: htb.Config{Classes: []htb.ClassConfig{
				{ID: 0x10001, Rate: fast, Burst: 1000, CBurst: 1000},
				{ID: 0x10010, Parent: 0x10001, Rate: 1000, Ceil: 1_000_000, Burst: 1000, CBurst: 1000, Quantum: 1000},
				{ID: 0x10020, Parent: 0x10001, Rate: 1000, Ceil: 1_000_000, Burst: 1000, CBurst: 1000, Quantum: 2000},
			}},
			arrivals: Merge(Backlog(0, 0x10010, 6, Fixed(1000)), Backlog(0, 0x10020, 6, Fixed(1000))),
			sent: []int64{0, 0, 12 * ms, 20 * ms, 32 * ms, 40 * ms,
				0, 0, 16 * ms, 24 * ms, 28 * ms, 36 * ms},
			stats: map[uint32]stat{
				0x10001: {tokens: -4 * ms, ctokens: -4 * ms, mode: CantSend, packets: 12, overlimits: 9, lends: 8},
				0x10010: {tokens: -960 * ms, ctokens: 0, mode: MayBorrow, packets: 6, overlimits: 1, lends: 2, borrows: 4},
				0x10020: {tokens: -964 * ms, ctokens: 0, mode: MayBorrow, packets: 6, overlimits: 1, lends: 2, borrows: 4},
			},
		},
		{
			// Packets 0-4 name 1:10, whose bucket holds one packet (8 ms)
			// and whose pfifo holds 2: 0 and 1 leave at once (tokens 8 ->
			// 0 -> -8 ms), 2 and 3 queue, 4 is dropped; 2 leaves at 8 ms,
			// 3 at 16 ms. Packet 5 names the handle and packets 6-7 a
			// missing class and none: with no default they are unshaped,
			// direct, and leave at once.
			name: "pfifo limit, direct queue for the handle and unclassified",
			cfg: htb.Config{LeafLimit: 2, Classes: []htb.ClassConfig{
				{ID: 0x10010, Rate: slow, Burst: 1000, CBurst: 1000},
			}},
			arrivals: Merge(Backlog(0, 0x10010, 5, Fixed(1000)), []Arrival{{0, 0x10000, 1000}, {1, 0x10099, 1000}, {2, 0, 1000}}),
			sent:     []int64{0, 0, 8 * ms, 16 * ms, -1, 0, 1, 2},
			drops:    1,
			stats: map[uint32]stat{
				0x10010: {tokens: -8 * ms, ctokens: -8 * ms, mode: CantSend, packets: 4, overlimits: 3, lends: 4, drops: 1},
			},
		},
		{
			// The same with default 1:10: packet 5 (the handle) still goes
			// direct; 6 and 7 go to 1:10, whose pfifo is full: dropped.
			// Packet 8 finds it empty at 20 ms but CantSend until 24 ms.
			name: "default class",
			cfg: htb.Config{Default: 0x10010, LeafLimit: 2, Classes: []htb.ClassConfig{
				{ID: 0x10010, Rate: slow, Burst: 1000, CBurst: 1000},
			}},
			arrivals: Merge(Backlog(0, 0x10010, 5, Fixed(1000)), []Arrival{{0, 0x10000, 1000}, {1, 0x10099, 1000}, {2, 0, 1000}, {20 * ms, 0, 1000}}),
			sent:     []int64{0, 0, 8 * ms, 16 * ms, -1, 0, -1, -1, 24 * ms},
			drops:    3,
			stats: map[uint32]stat{
				0x10010: {tokens: -8 * ms, ctokens: -8 * ms, mode: CantSend, packets: 5, overlimits: 4, lends: 5, drops: 3},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Simulate(tc.cfg, tc.arrivals, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := times(len(tc.arrivals), m.Sent); !reflect.DeepEqual(got, tc.sent) {
				t.Errorf("departures %v, want %v", got, tc.sent)
			}
			// The tree, in lockstep with the model, to the same numbers.
			if got := times(len(tc.arrivals), Conform(t, tc.cfg, tc.arrivals, nil)); !reflect.DeepEqual(got, tc.sent) {
				t.Errorf("tree's departures %v, want %v", got, tc.sent)
			}
			if m.Drops() != tc.drops {
				t.Errorf("drops %d, want %d", m.Drops(), tc.drops)
			}
			for _, s := range m.Classes() {
				if want, ok := tc.stats[s.ID]; ok && statOf(s) != want {
					t.Errorf("class %#x: %+v, want %+v", s.ID, statOf(s), want)
				}
			}
		})
	}
}
