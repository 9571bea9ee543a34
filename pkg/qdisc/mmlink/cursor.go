package mmlink

import "sort"

// msNS is a millisecond in ns.
const msNS = int64(1_000_000)

// cursor is a position in a repeating trace: the next opportunity, in
// its cycle (mahimahi's next_delivery_ and base_timestamp_). Opportunity
// i of cycle c is at base + (c*period + ms[i]) ms: cycle 0 starts at
// base, when the link was made or its trace changed.
type cursor struct {
	tr    *Trace
	base  int64
	cycle int64
	i     int
	// at is the next opportunity's time, ns.
	at int64
}

// start puts c at tr's first opportunity, the trace starting at base.
func (c *cursor) start(tr *Trace, base int64) {
	*c = cursor{tr: tr, base: base}
	c.at = c.timeOf(0, 0)
}

// timeOf returns the time of opportunity i of cycle cycle.
func (c *cursor) timeOf(cycle int64, i int) int64 {
	return c.base + (cycle*int64(c.tr.PeriodMS())+int64(c.tr.ms[i]))*msNS
}

// advance moves c to the opportunity after the next (mahimahi's
// use_a_delivery_opportunity, repeating).
func (c *cursor) advance() {
	c.i++
	if c.i == len(c.tr.ms) {
		c.i = 0
		c.cycle++
	}
	c.at = c.timeOf(c.cycle, c.i)
}

// ahead returns the time of the opportunity k after the next (0: the
// next).
func (c *cursor) ahead(k int64) int64 {
	n := int64(len(c.tr.ms))
	pos := int64(c.i) + k
	return c.timeOf(c.cycle+pos/n, int(pos%n))
}

// skipPast moves c to the first opportunity later than now, passing the
// ones at or before it unused, and returns how many it passed. It takes
// a binary search, however long ago the next one was.
func (c *cursor) skipPast(now int64) uint64 {
	if c.at > now {
		return 0
	}
	// Opportunity (cycle, i) is later than now when cycle*period + ms[i]
	// > (now-base)/1ms, that is, > m, the whole ms elapsed.
	m := (now - c.base) / msNS
	p := int64(c.tr.PeriodMS())
	cycle, rem := m/p, m%p
	i := sort.Search(len(c.tr.ms), func(j int) bool { return int64(c.tr.ms[j]) > rem })
	if i == len(c.tr.ms) {
		cycle, i = cycle+1, 0
	}
	n := int64(len(c.tr.ms))
	passed := (cycle-c.cycle)*n + int64(i-c.i)
	c.cycle, c.i = cycle, i
	c.at = c.timeOf(cycle, i)
	return uint64(passed)
}
