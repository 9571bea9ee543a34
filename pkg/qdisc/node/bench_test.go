package node

import (
	"fmt"
	"math"
	"os"
	"sync/atomic"
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

// BenchmarkAllocatorStep: one Step of a node's allocator over n live
// sandboxes (each its own pidfd, watched by the allocator's epoll, and
// its own seat, every one busy), the node's cost each Period: at 1000
// it must stay under 1% of a core (100 µs a 10 ms Period). n 100, 1000
// and 4000 show how it grows (N log N at most: the seats are read once,
// the shares sorted once per lending class).
func BenchmarkAllocatorStep(b *testing.B) {
	for _, n := range []int{100, 1000, 4000} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			tree, err := htb.ParseScript("class root classid 1:1 rate 100gbit; class parent 1:1 classid 1:10 rate 50gbit ceil 100gbit; class parent 1:1 classid 1:20 rate 50gbit ceil 100gbit")
			if err != nil {
				b.Fatal(err)
			}
			a, err := NewAllocator(tree, n)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			seats := make([][]uint64, n)
			for i := range n {
				f, err := OpenPidFD(os.Getpid())
				if err != nil {
					b.Skipf("no pidfd: %v", err)
				}
				p, err := NewPidFD(f)
				if err != nil {
					b.Fatal(err)
				}
				parent := uint32(1<<16 | 0x10)
				if i%2 == 1 {
					parent = 1<<16 | 0x20
				}
				_, _, sf, err := a.Join(htb.ClassConfig{ID: parent &^ 0xffff, Parent: parent, Rate: 10 * mbit, Ceil: 1000 * mbit, Prio: uint8(i % 3)}, p, 1)
				if err != nil {
					b.Fatal(err)
				}
				s, err := MapSeat(sf)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				seats[i] = s.words
			}
			now := int64(1)
			a.Step(now) // the index: a join's cost, not a step's
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, w := range seats {
					atomic.StoreUint64(&w[wDemand], 1000*mbit)
					atomic.AddUint64(&w[wSeq], 1)
				}
				now += int64(Period)
				a.Step(now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(Period.Nanoseconds())*100, "%core")
		})
	}
}

// BenchmarkMemberStep: a sandbox's step, Member.Share (publish what it
// sent and wants, read its share): it must stay under 10 µs, whatever
// the node's size (it reads its own seat only).
func BenchmarkMemberStep(b *testing.B) {
	n := newTestNode(b, "class root classid 1:1 rate 100gbit", []htb.ClassConfig{sandbox(10, 10, 100, 0)}, 1)
	m, w := n.ms[0], n.seats[0].words
	now, sent := int64(1), uint64(0)
	n.a.Step(now)
	b.ReportAllocs()
	for b.Loop() {
		now += int64(Period)
		atomic.StoreUint64(&w[aBeat], uint64(now)) // the allocator's, as it steps
		sent += 12500
		m.Share(now, Counters{Bytes: sent, Packets: sent / 1500, Busy: sent%3 == 0})
	}
}
