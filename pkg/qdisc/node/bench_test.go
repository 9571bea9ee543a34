package node

import (
	"math"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// BenchmarkAllocate100: one sandbox's share computation on a node of 100
// busy sandboxes (each runs it every Period).
func BenchmarkAllocate100(b *testing.B) {
	classes := []htb.ClassConfig{class(1, 0, 10000, 10000, 0)}
	demand := map[uint32]uint64{}
	for i := range 100 {
		c := class(uint32(100+i), 1, 50+uint64(i), 10000, uint8(i%3))
		classes = append(classes, c)
		demand[c.ID] = math.MaxUint64
	}
	b.ReportAllocs()
	for b.Loop() {
		Allocate(classes, demand)
	}
}

// BenchmarkShares100: the same on a tree already indexed (a Member's,
// while no sandbox joins or leaves).
func BenchmarkShares100(b *testing.B) {
	classes := []htb.ClassConfig{class(1, 0, 10000, 10000, 0)}
	var demand []uint64
	demand = append(demand, 0)
	for i := range 100 {
		classes = append(classes, class(uint32(100+i), 1, 50+uint64(i), 10000, uint8(i%3)))
		demand = append(demand, math.MaxUint64)
	}
	s := index(classes)
	b.ReportAllocs()
	for b.Loop() {
		s.run(demand)
	}
}
