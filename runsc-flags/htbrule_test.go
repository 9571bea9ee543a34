package runscflags

import "github.com/netqdisc/netqdisc/pkg/qdisc/htb"

// The htb tests' names for what the rule of htb.Script.Tighten reads a
// tree by, now htb's.

// effective returns c with tc's defaults for what it leaves 0.
func effective(c htb.ClassConfig) htb.ClassConfig { return c.WithDefaults() }

// under reports whether class id is a class under class top (not top
// itself) in classes.
func under(classes []htb.ClassConfig, id, top uint32) bool {
	return htb.Script{Classes: classes}.Under(id, top)
}

// childCount returns how many children each class of classes has.
func childCount(classes []htb.ClassConfig) map[uint32]int {
	return htb.Script{Classes: classes}.ChildCount()
}
