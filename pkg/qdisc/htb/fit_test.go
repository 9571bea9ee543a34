package htb

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFit holds Fit to rates worked out by hand: the class's own min'd,
// its children's scaled in proportion (rounded down, at least 1), ceils
// min'd with the parent's, down the subtree; classes outside unchanged.
func TestFit(t *testing.T) {
	type rc struct{ rate, ceil uint64 }
	for _, tc := range []struct {
		name       string
		classes    []ClassConfig
		id         uint32
		rate, ceil uint64
		want       map[uint32]rc // every class's Rate and Ceil after
		err        bool
	}{
		{
			name: "children scaled, grandchildren under them",
			classes: []ClassConfig{
				{ID: 0x10001, Rate: 100, Ceil: 200},
				{ID: 0x10002, Parent: 0x10001, Rate: 60},
				{ID: 0x10003, Parent: 0x10001, Rate: 60, Ceil: 100},
				{ID: 0x10004, Parent: 0x10002, Rate: 30, Ceil: 60},
				{ID: 0x10005, Parent: 0x10002, Rate: 10, Ceil: 60},
				{ID: 0x10009, Rate: 7}, // outside: untouched, Ceil 0 kept
			},
			id: 0x10001, rate: 10, ceil: 20,
			want: map[uint32]rc{
				0x10001: {10, 20},
				0x10002: {5, 20}, 0x10003: {5, 20}, // 60*10/120
				0x10004: {3, 20}, 0x10005: {1, 20}, // 30*5/40 = 3.75, 10*5/40 = 1.25
				0x10009: {7, 0},
			},
		},
		{
			name: "children that fit keep their rates",
			classes: []ClassConfig{
				{ID: 0x10001, Rate: 100},
				{ID: 0x10002, Parent: 0x10001, Rate: 2},
				{ID: 0x10003, Parent: 0x10001, Rate: 3, Ceil: 50},
			},
			id: 0x10001, rate: 10, ceil: 10,
			want: map[uint32]rc{0x10001: {10, 10}, 0x10002: {2, 2}, 0x10003: {3, 10}},
		},
		{
			name: "a subtree below the top only",
			classes: []ClassConfig{
				{ID: 0x10001, Rate: 100},
				{ID: 0x10002, Parent: 0x10001, Rate: 80},
				{ID: 0x10003, Parent: 0x10002, Rate: 80},
				{ID: 0x10004, Parent: 0x10001, Rate: 20},
			},
			id: 0x10002, rate: 8, ceil: 9,
			want: map[uint32]rc{0x10001: {100, 0}, 0x10002: {8, 9}, 0x10003: {8, 9}, 0x10004: {20, 0}},
		},
		{
			name: "the whole tree (id 0): the top classes under a root",
			classes: []ClassConfig{
				{ID: 0x10001, Rate: 100},
				{ID: 0x10002, Rate: 50, Ceil: 50},
				{ID: 0x10003, Parent: 0x10001, Rate: 100},
			},
			id: 0, rate: 30, ceil: 40,
			want: map[uint32]rc{0x10001: {20, 40}, 0x10002: {10, 40}, 0x10003: {20, 40}},
		},
		{
			name: "the qdisc's handle is the whole tree too",
			classes: []ClassConfig{
				{ID: 0x10001, Parent: 0x10000, Rate: 100},
			},
			id: 0x10000, rate: 30, ceil: 40,
			want: map[uint32]rc{0x10001: {30, 40}},
		},
		{
			name: "at least 1 byte/s each",
			classes: []ClassConfig{
				{ID: 0x10001, Rate: 100},
				{ID: 0x10002, Parent: 0x10001, Rate: 1},
				{ID: 0x10003, Parent: 0x10001, Rate: 1},
				{ID: 0x10004, Parent: 0x10001, Rate: 1},
			},
			id: 0x10001, rate: 2, ceil: 2,
			want: map[uint32]rc{0x10001: {2, 2}, 0x10002: {1, 1}, 0x10003: {1, 1}, 0x10004: {1, 1}},
		},
		{
			name: "rates that overflow a sum",
			classes: []ClassConfig{
				{ID: 0x10001, Rate: 1 << 63},
				{ID: 0x10002, Parent: 0x10001, Rate: 1 << 63},
				{ID: 0x10003, Parent: 0x10001, Rate: 1 << 63},
			},
			id: 0x10001, rate: 1000, ceil: 1000,
			want: map[uint32]rc{0x10001: {1000, 1000}, 0x10002: {500, 1000}, 0x10003: {500, 1000}}, // the sum saturates
		},
		{name: "no such class", classes: []ClassConfig{{ID: 0x10001, Rate: 1}}, id: 0x10002, rate: 1, ceil: 1, err: true},
		{name: "a rate of 0", classes: []ClassConfig{{ID: 0x10001, Rate: 1}}, id: 0x10001, rate: 0, ceil: 1, err: true},
		{name: "a parent after its child", classes: []ClassConfig{{ID: 0x10002, Parent: 0x10001, Rate: 1}, {ID: 0x10001, Rate: 1}}, id: 0x10001, rate: 1, ceil: 1, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]ClassConfig(nil), tc.classes...)
			out, err := Fit(tc.classes, tc.id, tc.rate, tc.ceil)
			if tc.err {
				if err == nil {
					t.Fatalf("Fit gave %+v, want an error", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[uint32]rc{}
			for _, c := range out {
				got[c.ID] = rc{c.Rate, c.Ceil}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(rc{})); diff != "" {
				t.Errorf("Fit (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.classes, cmp.AllowUnexported(Quota{})); diff != "" {
				t.Errorf("Fit changed its argument:\n%s", diff)
			}
		})
	}
}
