package htbtest

import (
	"fmt"
	"strings"
	"testing"
)

// fail reports a divergence at now with its context: the last steps, the
// last departures of both sides and both sides' classes.
func (ls *Lockstep) fail(t testing.TB, now int64, msg string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "t=%dns: %s\n", now-ls.Start, msg)
	b.WriteString("last steps:\n")
	for _, h := range ls.history {
		b.WriteString("  " + h + "\n")
	}
	for _, side := range []struct {
		name string
		sent []Departure
	}{{"tree", ls.Sent}, {"Linux", ls.Model.Sent}} {
		fmt.Fprintf(&b, "%s's last departures:\n", side.name)
		for _, d := range side.sent[max(0, len(side.sent)-6):] {
			b.WriteString("  " + ls.dep(d) + "\n")
		}
	}
	b.WriteString("Linux's classes:\n")
	b.WriteString(formatClasses(ls.Model.Classes()))
	b.WriteString("tree's classes:\n")
	b.WriteString(formatClasses(treeStats(ls.Tree.Classes())))
	t.Fatal(b.String())
}

// formatClasses prints classes one a line.
func formatClasses(cs []ClassStats) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %#x parent %#x level %d prio %d mode %v tokens %d ctokens %d sent %dB/%dp backlog %dB/%dp drops %d overlimits %d lends %d borrows %d quantum %d\n",
			c.ID, c.Parent, c.Level, c.Prio, c.Mode, c.Tokens, c.CTokens, c.Bytes, c.Packets, c.BacklogBytes, c.BacklogPackets, c.Drops, c.Overlimits, c.Lends, c.Borrows, c.Quantum)
	}
	return b.String()
}

// note keeps the last steps for fail.
func (ls *Lockstep) note(now int64, s string) {
	if len(ls.history) == 8 {
		ls.history = ls.history[1:]
	}
	ls.history = append(ls.history, fmt.Sprintf("t=%dns %s", now-ls.Start, s))
	if ls.Trace != nil {
		ls.Trace(ls.history[len(ls.history)-1])
	}
}

// dep prints a departure with its time from Start.
func (ls *Lockstep) dep(d Departure) string {
	return fmt.Sprintf("packet %d (class %#x, %d bytes) at %dns", d.Seq, d.Class, d.Size, d.At-ls.Start)
}

// rel prints an absolute time from Start, or "none".
func (ls *Lockstep) rel(at int64) string {
	if at < 0 {
		return "none"
	}
	return fmt.Sprintf("%dns", at-ls.Start)
}
