package node

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Show prints the node's classes as of now as `tc -s class show` prints
// an htb's: the operator's classes, then every seated sandbox's, parked
// ones too, with what it sent, the packets it sent within its rate
// (lended) and past it (borrowed), and its bucket's tokens, as its
// sandbox published them (a sandbox's own word: held to what its ceil
// could have sent since it joined, and an inner class's sums saturate). Under each sandbox's class a line says its slot, its
// process, when it last published and, parked, since when; its share.
func (a *Allocator) Show(now int64) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	stats := map[uint32]*htb.ClassStats{}
	var order []uint32
	for _, c := range a.classes {
		order = addStats(stats, order, c)
	}
	notes := map[uint32]string{}
	for _, st := range a.seats {
		if st == nil {
			continue
		}
		c, w := st.class, st.words
		order = addStats(stats, order, c)
		s := stats[c.ID]
		s.Level = 0
		// The sandbox's own words, held to what its ceil could have
		// sent since it joined (a megabyte more for its first bucket).
		s.Bytes = min(atomic.LoadUint64(&w[wBytes]), satAdd(mulDiv(c.Ceil, uint64(max(now-st.joined, 0)), 1e9), 1<<20))
		s.Packets = min(atomic.LoadUint64(&w[wPackets]), s.Bytes)
		s.Lends = min(atomic.LoadUint64(&w[wLended]), s.Packets)
		s.Borrows = min(atomic.LoadUint64(&w[wBorrowed]), s.Packets)
		tokens := min(atomic.LoadUint64(&w[wTokens]), 1<<40)
		s.Tokens = int64(mulDiv(tokens, 1e9, max(c.Rate, 1)))
		s.CTokens = int64(mulDiv(tokens, 1e9, max(c.Ceil, 1)))
		for p, d := stats[c.Parent], 0; p != nil && d < len(order); p, d = stats[p.Parent], d+1 {
			p.Bytes = satAdd(p.Bytes, s.Bytes)
			p.Packets = satAdd(p.Packets, s.Packets)
			if d == 0 {
				p.Lends = satAdd(p.Lends, s.Borrows)
			}
		}
		state := fmt.Sprintf("live, share %s", fmtRate(st.share))
		switch {
		case st.adopted:
			state = "adopted from the allocator before this one: no seat, holds its rate until it exits"
		case !st.live:
			state = fmt.Sprintf("parked %v ago, holds its rate", fmtAgo(now-st.parkedSince))
		}
		notes[c.ID] = fmt.Sprintf(" sandbox: slot %d pid %d joined %v ago, published %v ago, %s\n", st.slot, st.proc.PID(), fmtAgo(now-st.joined), fmtAgo(now-st.seenAt), state)
	}
	for _, c := range a.classes {
		if _, ok := stats[c.Parent]; !ok {
			stats[c.ID].Parent = 0 // the root, as tc shows it
		}
	}
	var out strings.Builder
	for _, id := range order {
		fmt.Fprintln(&out, stats[id].String())
		out.WriteString(notes[id])
	}
	return out.String()
}

// addStats adds class c's statistics, no packet yet, to stats and its id
// to order, which it returns.
func addStats(stats map[uint32]*htb.ClassStats, order []uint32, c htb.ClassConfig) []uint32 {
	stats[c.ID] = &htb.ClassStats{ID: c.ID, Parent: c.Parent, Prio: c.Prio, Rate: c.Rate, Ceil: c.Ceil, Burst: c.Burst, CBurst: c.CBurst, Quantum: c.Quantum, Level: 1}
	return append(order, c.ID)
}

// fmtAgo prints a duration of ns rounded to the millisecond.
func fmtAgo(ns int64) time.Duration { return time.Duration(max(ns, 0)).Round(time.Millisecond) }

// fmtRate prints bytes a second as tc does.
func fmtRate(r uint64) string { return rate.FormatRate(r) }
