package dispatch

import "sync/atomic"

// Budget is a bound on the bytes queued across lanes that share it.
type Budget struct {
	limit uint64
	used  atomic.Uint64
}

// NewBudget returns a Budget of limit bytes.
func NewBudget(limit uint64) *Budget { return &Budget{limit: limit} }

// take reserves n bytes, or reports false when they would pass the limit.
// Near the limit, two racing takes may both fail; neither can pass it.
func (b *Budget) take(n uint64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *Budget) give(n uint64) { b.used.Add(-n) }

// Used returns the bytes reserved now.
func (b *Budget) Used() uint64 { return b.used.Load() }
