package tbftest

import "math/rand"

// Bytes per second in 1 Mbit/s and 1 Gbit/s.
const (
	Mbit = 125_000
	Gbit = 1000 * Mbit
)

// Arrival is a packet arriving At ns after the shaper was made.
type Arrival struct {
	At   int64
	Size uint32
}

// Backlog is n packets that all arrive at at.
func Backlog(at int64, n int, size func(int) uint32) []Arrival {
	a := make([]Arrival, n)
	for i := range a {
		a[i] = Arrival{at, size(i)}
	}
	return a
}

// Poisson is n packets arriving at random, on average every gap ns.
func Poisson(seed int64, start int64, n int, gap float64, size func(int) uint32) []Arrival {
	rng := rand.New(rand.NewSource(seed))
	a := make([]Arrival, n)
	t := float64(start)
	for i := range a {
		t += rng.ExpFloat64() * gap
		a[i] = Arrival{int64(t), size(i)}
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

// Concat joins arrival patterns.
func Concat(parts ...[]Arrival) []Arrival {
	var a []Arrival
	for _, p := range parts {
		a = append(a, p...)
	}
	return a
}
