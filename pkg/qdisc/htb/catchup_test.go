package htb

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// lateDeparture is a packet a late-woken tree handed over: when, from
// which leaf, how long.
type lateDeparture struct {
	at   int64
	leaf uint32
	size uint32
}

// runLate keeps every leaf in busy backlogged with size-byte packets for
// dur ns, waking late by late after every event the tree waits for, and
// then once more at dur; it returns the departures.
func runLate(t *testing.T, cfg Config, busy []uint32, size uint32, late, dur int64) []lateDeparture {
	t.Helper()
	tr, err := NewTree(cfg, bySeq{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Purge()
	var deps []lateDeparture
	seq := uint64(0)
	pass := func(now int64) bool { // a wake-up's dequeues; false: none left
		for {
			for _, c := range busy {
				for tr.byID[c].leafPackets < 4 {
					seq++
					tr.Enqueue(qdisctest.MakePacket(int(size), 0, uint64(c)<<32|seq), size, now)
				}
			}
			pkt, sz, ok := tr.Dequeue(now)
			if !ok {
				return false
			}
			deps = append(deps, lateDeparture{now, uint32(qdisctest.Seq(pkt) >> 32), sz})
			pkt.DecRef()
		}
	}
	for now := int64(0); now < dur; now = tr.NextEvent() + late {
		pass(now)
	}
	pass(dur)
	return deps
}

// maxExcess returns the most bytes of deps from the leaves in from that
// left in any window [t_j, t_k] (every prefix of the departures from
// any one on) beyond ceil bytes per second over the window.
func maxExcess(deps []lateDeparture, from map[uint32]bool, ceil uint64) float64 {
	var sent float64
	lowest, worst := math.Inf(1), math.Inf(-1)
	for _, d := range deps {
		if !from[d.leaf] {
			continue
		}
		due := float64(ceil) * float64(d.at) / 1e9
		lowest = min(lowest, sent-due) // the window from this one on
		sent += float64(d.size)
		worst = max(worst, sent-due-lowest)
	}
	return worst
}

// TestLateWakeUpsBounded wakes trees late by 1 ms to 1 s after every
// event under saturating load: however late, no class's departures run
// ahead of their on-time schedule by more than its cburst and slack of
// its ceil (plus the packet that overdraws the bucket, and, for an inner
// class, its leaves' own buckets, which they spend without asking it);
// and a wake-up no later than the slack still catches up in full, so the
// rate holds.
func TestLateWakeUpsBounded(t *testing.T) {
	const (
		mbit = 125_000
		size = 1000
	)
	trees := []struct {
		name string
		cfg  Config
		busy []uint32
	}{
		{"one leaf at 10 Mbit/s", Config{Classes: []ClassConfig{{ID: 0x10010, Rate: 10 * mbit}}}, []uint32{0x10010}},
		{"one leaf at 100 Mbit/s, a 3000-byte cburst", Config{Classes: []ClassConfig{{ID: 0x10010, Rate: 100 * mbit, Burst: 3000, CBurst: 3000}}}, []uint32{0x10010}},
		{"two leaves borrowing up to 20 Mbit/s", Config{Classes: []ClassConfig{
			{ID: 0x10001, Rate: 20 * mbit},
			{ID: 0x10010, Parent: 0x10001, Rate: 5 * mbit, Ceil: 20 * mbit},
			{ID: 0x10020, Parent: 0x10001, Rate: 5 * mbit, Ceil: 20 * mbit, Prio: 1},
		}}, []uint32{0x10010, 0x10020}},
	}
	for _, tree := range trees {
		for _, slack := range []time.Duration{0, 2 * time.Millisecond, NoSlack} {
			cfg := tree.cfg
			cfg.Slack = slack
			inForce := int64(max(cfg.withDefaults().Slack, 0))
			onTime := runLate(t, cfg, tree.busy, size, 0, int64(time.Second))
			for _, late := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 8 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, time.Second} {
				t.Run(fmt.Sprintf("%s/slack %v/late %v", tree.name, time.Duration(inForce), late), func(t *testing.T) {
					dur := max(int64(time.Second), 4*int64(late))
					deps := runLate(t, cfg, tree.busy, size, int64(late), dur)
					tr, err := NewTree(cfg, bySeq{}, 0) // for the classes' settings
					if err != nil {
						t.Fatal(err)
					}
					for _, cl := range tr.classes {
						from := map[uint32]bool{}
						allowance := uint64(size) // the packet that overdraws
						for _, c := range tr.classes {
							for a := c; a != nil; a = a.parent {
								if a == cl && c.level == 0 {
									from[c.id] = true
									if c != cl {
										allowance += uint64(c.cfg.Burst) + size
									}
								}
							}
						}
						bound := float64(cl.cfg.CBurst) + float64(cl.cfg.Ceil)*float64(inForce)/1e9 + float64(allowance)
						if got := maxExcess(deps, from, cl.cfg.Ceil); got > bound {
							t.Errorf("class %x sent %.0f bytes ahead of its ceil's schedule; want at most cburst %d + slack %v of ceil %d + %d", cl.id, got, cl.cfg.CBurst, time.Duration(inForce), cl.cfg.Ceil, allowance)
						}
					}
					if int64(late) > inForce {
						return
					}
					// Within the slack: by 1 s, what on-time wake-ups sent.
					var want, got uint64
					for _, d := range onTime {
						want += uint64(d.size)
					}
					for _, d := range deps {
						if d.at <= int64(time.Second) {
							got += uint64(d.size)
						}
					}
					if got+size < want || got > want {
						t.Errorf("woken %v late (slack %v): %d bytes sent by 1 s, %d woken on time; want within a packet", late, time.Duration(inForce), got, want)
					}
				})
			}
		}
	}
}
