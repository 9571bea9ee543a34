package htbtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// ConformPolled is Conform with the tree also dequeued every poll ns while
// it holds packets (at most maxPolls times) and the model only when Linux
// would call it: more dequeues than Linux makes must not change a
// departure.
func ConformPolled(t testing.TB, cfg htb.Config, arrivals []Arrival, changes []Change, poll int64, maxPolls int) {
	t.Helper()
	ls := NewLockstep(t, cfg)
	ls.Poll, ls.MaxPolls = poll, maxPolls
	ls.Run(t, arrivals, changes)
	ls.Finish(t)
	t.Logf("%d polls; timer steps only the tree asked for: %d; only Linux's watchdog: %d", ls.polls, ls.OnlyTree, ls.OnlyLinux)
}

// Conform runs the arrivals and changes in lockstep and then checks the
// end state (Finish); it returns the departures, their times from Start
// (as Simulate's are from 0).
func Conform(t testing.TB, cfg htb.Config, arrivals []Arrival, changes []Change) []Departure {
	t.Helper()
	ls := NewLockstep(t, cfg)
	ls.Run(t, arrivals, changes)
	ls.Finish(t)
	if ls.OnlyTree+ls.OnlyLinux > 0 {
		t.Logf("timer steps only the tree asked for: %d; only Linux's watchdog: %d", ls.OnlyTree, ls.OnlyLinux)
	}
	sent := make([]Departure, len(ls.Sent))
	for k, d := range ls.Sent {
		d.At -= ls.Start
		sent[k] = d
	}
	return sent
}

// Finish checks the end state: the queues' lengths and drops, the
// direct queue's count, and every class's statistics (all but Giants, which
// Linux no longer counts); then it purges the tree and checks that every
// packet's references came back.
func (ls *Lockstep) Finish(t testing.TB) {
	t.Helper()
	m, tr := ls.Model, ls.Tree
	now := NowNS(ls.Clock)
	mp, mb := m.Len()
	tp, tbytes := tr.Len()
	if mp != tp || mb != tbytes {
		ls.fail(t, now, fmt.Sprintf("Len: tree %d packets %d bytes; Linux %d packets %d bytes", tp, tbytes, mp, mb))
	}
	if g, w := tr.Drops(), m.Drops(); g != w {
		ls.fail(t, now, fmt.Sprintf("Drops: tree %d, Linux %d", g, w))
	}
	if g, w := tr.DirectPackets(), m.DirectPackets(); g != w {
		ls.fail(t, now, fmt.Sprintf("DirectPackets: tree %d, Linux %d", g, w))
	}
	if diff := DiffClasses(tr.Classes(), m.Classes(), m.Handle()); diff != "" {
		ls.fail(t, now, "class statistics differ:\n"+diff)
	}
	tr.Purge()
	qdisctest.CheckReleased(t, ls.pkts)
	ls.pkts = nil
}

// DiffClasses returns the differences between the tree's class statistics
// and the model's, one line a field, "" when none. A top class's Parent
// may be 0 or the handle. An inner class's Quantum and Prio are not
// compared: Linux keeps (and tc shows) those it had as a leaf, but they are
// in force only for leaves.
func DiffClasses(tree []htb.ClassStats, want []ClassStats, handle uint32) string {
	got := treeStats(tree)
	var b strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&b, "tree has %d classes, Linux %d\n", len(got), len(want))
	}
	for k := 0; k < len(got) && k < len(want); k++ {
		g, w := got[k], want[k]
		if g.Parent == 0 {
			g.Parent = handle
		}
		g.Giants, w.Giants = 0, 0
		if w.Level > 0 {
			g.Quantum, w.Quantum, g.Prio, w.Prio = 0, 0, 0, 0
		}
		if g == w {
			continue
		}
		for _, f := range classFields {
			if gv, wv := f.get(g), f.get(w); gv != wv {
				fmt.Fprintf(&b, "class %#x %s: tree %v, Linux %v\n", w.ID, f.name, gv, wv)
			}
		}
	}
	return b.String()
}

// classFields name ClassStats's fields for DiffClasses.
var classFields = []struct {
	name string
	get  func(ClassStats) any
}{
	{"ID", func(s ClassStats) any { return s.ID }},
	{"Parent", func(s ClassStats) any { return s.Parent }},
	{"Level", func(s ClassStats) any { return s.Level }},
	{"Prio", func(s ClassStats) any { return s.Prio }},
	{"Rate", func(s ClassStats) any { return s.Rate }},
	{"Ceil", func(s ClassStats) any { return s.Ceil }},
	{"Burst", func(s ClassStats) any { return s.Burst }},
	{"CBurst", func(s ClassStats) any { return s.CBurst }},
	{"Quantum", func(s ClassStats) any { return s.Quantum }},
	{"Mode", func(s ClassStats) any { return s.Mode }},
	{"Bytes", func(s ClassStats) any { return s.Bytes }},
	{"Packets", func(s ClassStats) any { return s.Packets }},
	{"Drops", func(s ClassStats) any { return s.Drops }},
	{"Overlimits", func(s ClassStats) any { return s.Overlimits }},
	{"Requeues", func(s ClassStats) any { return s.Requeues }},
	{"BacklogBytes", func(s ClassStats) any { return s.BacklogBytes }},
	{"BacklogPackets", func(s ClassStats) any { return s.BacklogPackets }},
	{"Lends", func(s ClassStats) any { return s.Lends }},
	{"Borrows", func(s ClassStats) any { return s.Borrows }},
	{"Tokens", func(s ClassStats) any { return s.Tokens }},
	{"CTokens", func(s ClassStats) any { return s.CTokens }},
}

// treeStats maps the tree's class statistics to the model's: the same
// fields, the mode mapped by treeMode.
func treeStats(cs []htb.ClassStats) []ClassStats {
	out := make([]ClassStats, len(cs))
	for k, c := range cs {
		out[k] = ClassStats{
			ID: c.ID, Parent: c.Parent, Level: c.Level, Prio: c.Prio,
			Rate: c.Rate, Ceil: c.Ceil, Burst: c.Burst, CBurst: c.CBurst,
			Quantum: c.Quantum, Mode: treeMode(c.Mode),
			Bytes: c.Bytes, Packets: c.Packets,
			Drops: c.Drops, Overlimits: c.Overlimits, Requeues: c.Requeues,
			BacklogBytes: c.BacklogBytes, BacklogPackets: c.BacklogPackets,
			Lends: c.Lends, Borrows: c.Borrows, Giants: c.Giants,
			Tokens: c.Tokens, CTokens: c.CTokens,
		}
	}
	return out
}

// treeMode maps package htb's Mode to the model's, name by name; a mode
// the model does not know is one no model mode equals.
func treeMode(m htb.Mode) Mode {
	switch m {
	case htb.CantSend:
		return CantSend
	case htb.MayBorrow:
		return MayBorrow
	case htb.CanSend:
		return CanSend
	}
	return Mode(0x80 | m)
}
