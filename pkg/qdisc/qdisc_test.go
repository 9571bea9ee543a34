package qdisc

import (
	"testing"
	"time"
)

func TestStatsString(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Stats
		want string
	}{
		{
			name: "tc example",
			s:    Stats{Bytes: 3000, Packets: 3, Overlimits: 1, BacklogBytes: 2000, BacklogPackets: 2},
			want: "Sent 3000 bytes 3 pkt (dropped 0, overlimits 1 requeues 0)\n backlog 2000b 2p requeues 0",
		},
		{
			name: "zero",
			want: "Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0",
		},
		{
			name: "large backlog in tc's units",
			s:    Stats{Bytes: 1 << 40, Packets: 7, Drops: 5, BacklogBytes: 10240, BacklogPackets: 10},
			want: "Sent 1099511627776 bytes 7 pkt (dropped 5, overlimits 0 requeues 0)\n backlog 10Kb 10p requeues 0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.String(); got != tc.want {
				t.Errorf("String() =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestStatsAdd(t *testing.T) {
	a := Stats{1, 2, 3, 4, 5, 6, 7}
	b := Stats{10, 20, 30, 40, 50, 60, 70}
	if got, want := a.Add(b), (Stats{11, 22, 33, 44, 55, 66, 77}); got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}

func TestHistogram(t *testing.T) {
	var h Histogram
	if got := h.Snapshot().Quantile(0.5); got != 0 {
		t.Errorf("empty median = %v", got)
	}
	// 1..1000 µs: the median is 500 µs, the p99 990 µs.
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	h.Record(-time.Second) // counts as 0
	s := h.Snapshot()
	if s.Count() != 1001 {
		t.Fatalf("Count = %d, want 1001", s.Count())
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, 1000 * time.Microsecond}} {
		got := s.Quantile(tc.q)
		if got < tc.want || float64(got) > 1.25*float64(tc.want) {
			t.Errorf("Quantile(%v) = %v, want within [%v, 1.25x]", tc.q, got, tc.want)
		}
	}
	if s.Quantile(0) != 0 {
		t.Errorf("Quantile(0) = %v, want 0", s.Quantile(0))
	}
	if d := s.Sub(s).Count(); d != 0 {
		t.Errorf("s - s has %d samples", d)
	}
	if d := s.Add(s).Count(); d != 2002 {
		t.Errorf("s + s has %d samples", d)
	}
	// Every value falls in a bucket whose upper bound is at least it.
	for _, v := range []uint64{0, 1, 3, 4, 5, 7, 8, 1000, 1 << 40, 1<<63 + 5, ^uint64(0)} {
		if u := histUpper(histIndex(v)); u < v || (v > 4 && float64(u) > 1.25*float64(v)) {
			t.Errorf("value %d in bucket %d with upper bound %d", v, histIndex(v), u)
		}
	}
}
