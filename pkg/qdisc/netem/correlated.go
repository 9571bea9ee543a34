package netem

// correlated is netem's crndstate: a draw that leans on the last one by
// a correlation rho of 2^32 (tc's CORRELATION percent scaled), as
// Linux's get_crandom computes it: the new draw weighted by 1-rho and the
// last by rho, in 32-bit fixed point. With rho 0 draws are independent;
// at its largest every draw is the first.
type correlated struct {
	last, rho uint32
}

// newCorrelated returns a correlated source of correlation rho whose
// first "last" draw is p's next (Linux's init_crandom draws it from the
// kernel's entropy; from p, a seeded qdisc repeats itself exactly).
func newCorrelated(rho uint32, p *prng) correlated {
	return correlated{rho: rho, last: p.next()}
}

// draw returns the next draw (Linux's get_crandom). A nil c draws
// uncorrelated.
func (c *correlated) draw(p *prng) uint32 {
	v := p.next()
	if c == nil || c.rho == 0 {
		return v
	}
	rho := uint64(c.rho) + 1
	answer := uint32((uint64(v)*(1<<32-rho) + uint64(c.last)*rho) >> 32)
	c.last = answer
	return answer
}
