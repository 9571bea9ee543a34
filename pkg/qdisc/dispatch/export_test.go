package dispatch

// Used returns the bytes the budget counts now: queued, and held as the
// lanes' credit.
func (b *Budget) Used() uint64 { return b.used.Load() }
