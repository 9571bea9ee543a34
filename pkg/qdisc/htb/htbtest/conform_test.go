package htbtest

import (
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// TestTreeMode: each of the tree's modes maps to the model's of the same
// name in sch_htb.c, and a mode the tree might add maps to none of them.
func TestTreeMode(t *testing.T) {
	for _, tc := range []struct {
		tree htb.Mode
		want Mode
	}{
		{htb.CantSend, CantSend},
		{htb.MayBorrow, MayBorrow},
		{htb.CanSend, CanSend},
	} {
		if got := treeMode(tc.tree); got != tc.want {
			t.Errorf("treeMode(%d) = %v, want %v", tc.tree, got, tc.want)
		}
	}
	if got := treeMode(htb.CanSend + 1); got == CantSend || got == MayBorrow || got == CanSend {
		t.Errorf("treeMode of an unknown mode = %v, a mode of the model's", got)
	}
}
