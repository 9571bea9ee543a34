package netem

// prng is Linux's prandom state (lib/random32.c): L'Ecuyer's maximally
// equidistributed combined Tausworthe generator LFSR113, four 32-bit
// components each stepped by its own shift register, their XOR the
// output. netem draws every random number of a qdisc from one, seeded
// by `seed` or at random.
type prng struct {
	s1, s2, s3, s4 uint32
}

// seed sets p as Linux's prandom_seed_state does: one 32-bit mix of the
// 64-bit seed for all four components, each raised past the least value
// its register needs (2, 8, 16 and 128).
func (p *prng) seed(seed uint64) {
	i := uint32((seed >> 32) ^ (seed << 10) ^ seed)
	p.s1 = atLeast(i, 2)
	p.s2 = atLeast(i, 8)
	p.s3 = atLeast(i, 16)
	p.s4 = atLeast(i, 128)
}

// atLeast is Linux's __seed: x, or x+m where x is below m.
func atLeast(x, m uint32) uint32 {
	if x < m {
		return x + m
	}
	return x
}

// tausworthe steps one component: the bits kept by mask c shifted up by
// d, XOR the component XOR itself shifted up by a, shifted down by b.
func tausworthe(s uint32, a, b, c, d uint) uint32 {
	return (s&uint32(c))<<d ^ ((s<<a)^s)>>b
}

// next is Linux's prandom_u32_state: the next 32 random bits.
func (p *prng) next() uint32 {
	p.s1 = tausworthe(p.s1, 6, 13, 0xfffffffe, 18)
	p.s2 = tausworthe(p.s2, 2, 27, 0xfffffff8, 2)
	p.s3 = tausworthe(p.s3, 13, 21, 0xfffffff0, 7)
	p.s4 = tausworthe(p.s4, 3, 12, 0xffffff80, 13)
	return p.s1 ^ p.s2 ^ p.s3 ^ p.s4
}

// below returns a draw in [0, n) for n > 0 as Linux's
// __get_random_u32_below makes one from 32-bit draws (Lemire's method):
// the high half of a draw times n, drawing again while the low half
// falls in the few values that would favour some results, so that every
// result is equally likely.
func (p *prng) below(n uint32) uint32 {
	m := uint64(p.next()) * uint64(n)
	if uint32(m) < n {
		bound := -n % n
		for uint32(m) < bound {
			m = uint64(p.next()) * uint64(n)
		}
	}
	return uint32(m >> 32)
}

// corruptSeedMix is what the seed is XORed with to seed the generator
// that picks the byte and bit a corrupted packet has flipped ("netemcor"
// in ASCII): a sequence of its own, so that netem's own draws stay
// Linux's, draw for draw, whatever is corrupted.
const corruptSeedMix = 0x6e6574656d636f72
