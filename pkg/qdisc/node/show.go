package node

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// Show prints the node's classes as of now as `tc -s class show` prints
// an htb's: the operator's classes, then each live sandbox's, with what
// it sent, the packets it sent within its rate (lended) and past it
// (borrowed), and its bucket's tokens. An inner class's counters are its
// sandboxes' sums; it lends what they borrowed.
func (b *Board) Show(now int64) (string, error) {
	tree, _, err := b.Tree()
	if err != nil {
		return "", err
	}
	leaves := b.Snapshot(now, int64(Stale))
	r2q := uint64(tree.Qdisc.R2Q)
	if r2q == 0 {
		r2q = htb.DefaultR2Q
	}
	var classes []htb.ClassConfig
	for _, c := range tree.Classes {
		classes = append(classes, withQuantum(c, r2q))
	}
	stats := map[uint32]*htb.ClassStats{}
	var order []uint32
	add := func(c htb.ClassConfig) *htb.ClassStats {
		s := &htb.ClassStats{ID: c.ID, Parent: c.Parent, Prio: c.Prio, Rate: c.Rate, Ceil: c.Ceil, Burst: c.Burst, CBurst: c.CBurst, Quantum: c.Quantum, Level: 1}
		stats[c.ID] = s
		order = append(order, c.ID)
		return s
	}
	for _, c := range classes {
		add(c)
	}
	for _, l := range leaves {
		c := withQuantum(l.Class, r2q)
		s := add(c)
		s.Level = 0
		s.Bytes, s.Packets, s.Lends, s.Borrows = l.Bytes, l.Packets, l.Lended, l.Borrowed
		s.Tokens = int64(mulDiv(l.Tokens, 1e9, max(c.Rate, 1)))
		s.CTokens = int64(mulDiv(l.Tokens, 1e9, max(c.Ceil, 1)))
		for p, d := stats[c.Parent], 0; p != nil && d < len(order); p, d = stats[p.Parent], d+1 {
			p.Bytes += l.Bytes
			p.Packets += l.Packets
			if d == 0 {
				p.Lends += l.Borrowed
			}
		}
	}
	for _, c := range classes {
		if _, ok := stats[c.Parent]; !ok {
			stats[c.ID].Parent = 0 // the root, as tc shows it
		}
	}
	var out strings.Builder
	for _, id := range order {
		fmt.Fprintln(&out, stats[id].String())
	}
	return out.String(), nil
}
