package qdisc

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram counts durations in buckets a quarter of a power of two wide
// (each bucket at most 25% wider than the last), from 1 ns to hours. It is
// safe for concurrent use and never allocates; a qdisc uses it to record
// how late its dispatchers wake.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
}

const histBuckets = 64 * 4

// histIndex is 4*floor(log2(v)) plus the two bits after the leading one.
func histIndex(v uint64) int {
	if v < 4 {
		return int(v)
	}
	lg := 63 - bits.LeadingZeros64(v)
	return 4*lg + int(v>>(lg-2)&3)
}

// histUpper is the largest value in bucket i.
func histUpper(i int) uint64 {
	if i < 4 {
		return uint64(i)
	}
	lg, sub := i/4, uint64(i%4)
	if lg == 63 && sub == 3 {
		return ^uint64(0) // (4+3+1)<<61 - 1 would overflow
	}
	return (4+sub+1)<<(lg-2) - 1
}

// Record counts d (negative durations count as 0).
func (h *Histogram) Record(d time.Duration) {
	h.counts[histIndex(uint64(max(d, 0)))].Add(1)
}

// Snapshot returns the counts so far.
func (h *Histogram) Snapshot() HistogramSnapshot {
	var s HistogramSnapshot
	for i := range h.counts {
		s.counts[i] = h.counts[i].Load()
	}
	return s
}

// HistogramSnapshot is a Histogram's counts at one moment.
type HistogramSnapshot struct {
	counts [histBuckets]uint64
}

// Add returns the sum of two snapshots.
func (s HistogramSnapshot) Add(o HistogramSnapshot) HistogramSnapshot {
	for i := range s.counts {
		s.counts[i] += o.counts[i]
	}
	return s
}

// Sub returns s less an earlier snapshot o of the same histogram.
func (s HistogramSnapshot) Sub(o HistogramSnapshot) HistogramSnapshot {
	for i := range s.counts {
		s.counts[i] -= o.counts[i]
	}
	return s
}

// Count is the number of durations recorded.
func (s HistogramSnapshot) Count() uint64 {
	var n uint64
	for _, c := range s.counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket that holds the q-th
// quantile (0 <= q <= 1), within 25% above the true value; 0 when empty.
func (s HistogramSnapshot) Quantile(q float64) time.Duration {
	n := s.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			return time.Duration(histUpper(i))
		}
	}
	return time.Duration(histUpper(histBuckets - 1))
}

// String prints the count, median, p99 and maximum.
func (s HistogramSnapshot) String() string {
	if s.Count() == 0 {
		return "no samples"
	}
	return fmt.Sprintf("%d samples, p50 %v, p99 %v, max %v", s.Count(), s.Quantile(0.5), s.Quantile(0.99), s.Quantile(1))
}
