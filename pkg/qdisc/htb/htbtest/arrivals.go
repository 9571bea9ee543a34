package htbtest

import (
	"math/rand"
	"sort"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// Bytes per second in 1 Mbit/s and 1 Gbit/s.
const (
	Mbit = 125_000
	Gbit = 1000 * Mbit
)

// Arrival is a packet of Size bytes arriving At ns after the tree was made,
// that names Class: a leaf, the qdisc's handle (the direct queue), or
// anything else (the default class).
type Arrival struct {
	At    int64
	Class uint32
	Size  uint32
}

// Change is htb_change_class on an existing class At ns after the tree was
// made; or, if Purge, htb_reset (tc qdisc's reset: the queues dropped, the
// classes CanSend again).
type Change struct {
	At    int64
	Class htb.ClassConfig
	Purge bool
}

// Backlog is n packets for class that all arrive at at.
func Backlog(at int64, class uint32, n int, size func(int) uint32) []Arrival {
	a := make([]Arrival, n)
	for i := range a {
		a[i] = Arrival{at, class, size(i)}
	}
	return a
}

// Paced is n packets for class, one every gap ns from start.
func Paced(start int64, class uint32, n int, gap int64, size func(int) uint32) []Arrival {
	a := make([]Arrival, n)
	for i := range a {
		a[i] = Arrival{start + int64(i)*gap, class, size(i)}
	}
	return a
}

// Poisson is n packets for class arriving at random from start, on average
// every gap ns.
func Poisson(seed, start int64, class uint32, n int, gap float64, size func(int) uint32) []Arrival {
	rng := rand.New(rand.NewSource(seed))
	a := make([]Arrival, n)
	t := float64(start)
	for i := range a {
		t += rng.ExpFloat64() * gap
		a[i] = Arrival{int64(t), class, size(i)}
	}
	return a
}

// Fixed sizes: all n bytes.
func Fixed(n uint32) func(int) uint32 { return func(int) uint32 { return n } }

// Odd sizes: 61..1513, odd, from a seeded generator.
func Odd(seed int64) func(int) uint32 {
	rng := rand.New(rand.NewSource(seed))
	return func(int) uint32 { return uint32(61 + 2*rng.Intn(727)) }
}

// Merge joins arrival patterns in time order; arrivals at the same time
// keep the order of the parts.
func Merge(parts ...[]Arrival) []Arrival {
	var a []Arrival
	for _, p := range parts {
		a = append(a, p...)
	}
	sort.SliceStable(a, func(i, j int) bool { return a[i].At < a[j].At })
	return a
}
