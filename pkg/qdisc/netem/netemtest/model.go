// Package netemtest is a model of Linux's netem (sch_netem.c), written
// from the kernel's source apart from package netem, to hold netem's
// queue to it packet for packet: driven by the same seed it makes the
// same random draws in the same order, and says which packets are lost,
// duplicated, corrupted (which byte and bit), cut into segments, sent
// ahead and when each leaves. It keeps Linux's two queues as Linux has
// them (a list for packets in time order, a tree for the others, the
// list's head first on a tie), in plain slices.
package netemtest

import (
	"math"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
)

// Packet is a packet the model holds: its id (the caller's), size, and
// time to send; the segment of a GSO packet it is, if netem cut one; and
// the bit corruption flipped in it, if it did.
type Packet struct {
	ID   uint64
	Size uint32
	TTS  int64
	// Seg is the packet's place among its GSO packet's segments, from
	// 1; 0 for a packet whole.
	Seg int
	// Corrupt says a bit was flipped: bit Bit (0 the lowest) of byte
	// Byte of the packet's corruptible part (Shape.Region).
	Corrupt bool
	Byte    uint32
	Bit     uint8
}

// Shape is what the model knows of a packet: what it is charged, how
// many of its bytes corruption may flip a bit in (its transport part:
// all of a packet with no headers), and for a GSO packet the segments
// netem_segment cuts it into, in order (nil for a packet of one).
type Shape struct {
	Size, Region uint32
	Segs         []Shape
}

// outcome is netem_enqueue's answer: queued, lost (taken and dropped),
// or refused (dropped, not taken).
type outcome int

const (
	queued outcome = iota
	lost
	refused
)

// corruptMix is what netem XORs its seed with to seed the generator that
// picks a corrupted packet's byte and bit (package netem's doc).
const corruptMix = 0x6e6574656d636f72

// Model is netem's state.
type Model struct {
	c netem.Config

	rnd                                 lfsr
	delayCor, lossCor, dupCor, reordCor crnd
	corruptCor                          crnd
	lossState                           int
	// flip picks corrupted bytes and bits (Linux: the kernel's entropy).
	flip lfsr

	linear, tree, ahead []Packet
	counter             uint32
	slotOn              bool
	slotNext            int64
	pktsLeft, bytesLeft int64

	// Drops counts the packets lost or refused at the limit, and the
	// marks (none here: the model's packets are not ECN-capable).
	Drops uint64
	// Requeues counts the packets sent ahead.
	Requeues uint64
}

// New returns the model of netem configured as c, which must give a
// seed (c.Seed): netem_init and netem_change, with the correlations'
// first draws from the seeded generator as package netem takes them.
func New(c netem.Config, now int64) *Model {
	m := &Model{c: c}
	m.rnd.seed(*c.Seed)
	m.flip.seed(*c.Seed ^ corruptMix)
	m.lossState = 1
	if k := c.Corr; k != nil {
		m.delayCor = crnd{rho: uint32(k.Delay), last: m.rnd.next()}
		m.lossCor = crnd{rho: uint32(k.Loss), last: m.rnd.next()}
		m.dupCor = crnd{rho: uint32(k.Duplicate), last: m.rnd.next()}
	}
	if r := c.Reorder; r != nil {
		m.reordCor = crnd{rho: uint32(r.Correlation), last: m.rnd.next()}
	}
	if r := c.Corrupt; r != nil {
		m.corruptCor = crnd{rho: uint32(r.Correlation), last: m.rnd.next()}
	}
	if s := c.Slot; s != nil {
		m.slotOn = s.MinDelay != 0 || s.MaxDelay != 0 || s.DistJitter != 0
		m.slotNext = now
		m.pktsLeft, m.bytesLeft = bound(s.MaxPackets), bound(s.MaxBytes)
	}
	return m
}

func bound(n int32) int64 {
	if n == 0 {
		return math.MaxInt32
	}
	return int64(n)
}

// Len returns how many packets the model holds.
func (m *Model) Len() int { return len(m.linear) + len(m.tree) + len(m.ahead) }

// Enqueue is netem_enqueue for packet id of size bytes, with no headers,
// at now: it reports whether the packet was taken (a lost packet is
// taken).
func (m *Model) Enqueue(id uint64, size uint32, now int64) bool {
	return m.EnqueueShape(id, Shape{Size: size, Region: size}, now)
}

// EnqueueShape is netem_enqueue for packet id of shape sh at now.
func (m *Model) EnqueueShape(id uint64, sh Shape, now int64) bool {
	return m.enqueue(Packet{ID: id, Size: sh.Size}, sh, now, false) != refused
}

func (m *Model) enqueue(p Packet, sh Shape, now int64, dup bool) outcome {
	c := &m.c
	count := 1
	if c.Duplicate != 0 && !dup && uint32(c.Duplicate) >= m.dupCor.get(&m.rnd) {
		count++
	}
	if m.lost() {
		count--
	}
	if count == 0 {
		m.Drops++
		return lost
	}
	twin := p
	var rest []Shape
	if k := c.Corrupt; k != nil && k.Probability != 0 && uint32(k.Probability) >= m.corruptCor.get(&m.rnd) {
		region := sh.Region
		if len(sh.Segs) > 0 { // netem_segment: the first is corrupted
			p.Seg, p.Size, region, rest = 1, sh.Segs[0].Size, sh.Segs[0].Region, sh.Segs[1:]
		}
		if region > 0 {
			p.Corrupt, p.Byte, p.Bit = true, m.flip.below(region), uint8(m.flip.below(8))
		}
	}
	if m.Len() >= int(c.Limit) {
		m.Drops++
		return refused
	}
	if count > 1 {
		m.enqueue(twin, sh, now, true)
	}
	m.hold(p, now)
	for i, r := range rest {
		if m.enqueue(Packet{ID: p.ID, Seg: i + 2, Size: r.Size}, r, now, dup) != queued {
			m.Drops++ // qdisc_enqueue's rc, counted again
		}
	}
	return queued
}

// hold is the rest of netem_enqueue for p: sent ahead, or held until its
// time to send.
func (m *Model) hold(p Packet, now int64) {
	c := &m.c
	var reorder uint32
	if c.Reorder != nil {
		reorder = uint32(c.Reorder.Probability)
	}
	if c.Gap != 0 && c.Reorder == nil {
		reorder = math.MaxUint32
	}
	if c.Gap == 0 || m.counter < c.Gap-1 || reorder < m.reordCor.get(&m.rnd) {
		delay := m.tabledist(int64(c.Latency), int64(min(c.Jitter, math.MaxInt32)), &m.delayCor, c.Dist)
		if r := c.Rate; r != nil && r.Rate != 0 {
			var last *Packet
			if n := len(m.ahead); n > 0 {
				last = &m.ahead[n-1]
			}
			if n := len(m.tree); n > 0 {
				t := &m.tree[n-1]
				if last == nil || t.TTS > last.TTS {
					last = t
				}
			}
			if n := len(m.linear); n > 0 {
				t := &m.linear[n-1]
				if last == nil || t.TTS > last.TTS {
					last = t
				}
			}
			if last != nil {
				delay -= last.TTS - now
				delay = max(0, delay)
				now = last.TTS
			}
			delay += packetTime(uint64(p.Size), r)
		}
		p.TTS = now + delay
		m.counter++
		if n := len(m.linear); n == 0 || p.TTS >= m.linear[n-1].TTS {
			m.linear = append(m.linear, p)
		} else {
			// The tree: after every packet of no later time.
			i := len(m.tree)
			for i > 0 && m.tree[i-1].TTS > p.TTS {
				i--
			}
			m.tree = append(m.tree[:i], append([]Packet{p}, m.tree[i:]...)...)
		}
		return
	}
	m.counter = 0
	m.Requeues++
	p.TTS = now
	m.ahead = append([]Packet{p}, m.ahead...)
}

// packetTime is packet_time_ns (with package netem's floor of 0 for a
// negative overhead past the packet's length).
func packetTime(n uint64, r *netem.RateConfig) int64 {
	l := max(int64(n)+int64(r.PacketOverhead), 0)
	if r.CellSize != 0 {
		cells := l / int64(r.CellSize)
		if l > cells*int64(r.CellSize) {
			cells++
		}
		l = cells * (int64(r.CellSize) + int64(r.CellOverhead))
	}
	return int64(uint64(l) * uint64(time.Second) / r.Rate)
}

// Dequeue is netem_dequeue at now: the packet that leaves, or ok false
// and when the next may (next).
func (m *Model) Dequeue(now int64) (p Packet, next int64, ok bool) {
	if len(m.ahead) > 0 {
		p, m.ahead = m.ahead[0], m.ahead[1:]
		return p, 0, true
	}
	var fromTree bool
	switch {
	case len(m.linear) == 0 && len(m.tree) == 0:
		return Packet{}, 0, false
	case len(m.linear) == 0:
		p, fromTree = m.tree[0], true
	case len(m.tree) == 0:
		p = m.linear[0]
	case m.tree[0].TTS < m.linear[0].TTS:
		p, fromTree = m.tree[0], true
	default:
		p = m.linear[0]
	}
	if m.slotOn && m.slotNext < p.TTS {
		m.getSlotNext(now)
	}
	if p.TTS <= now && (!m.slotOn || m.slotNext <= now) {
		if fromTree {
			m.tree = m.tree[1:]
		} else {
			m.linear = m.linear[1:]
		}
		if m.slotOn {
			m.pktsLeft--
			m.bytesLeft -= int64(p.Size)
			if m.pktsLeft <= 0 || m.bytesLeft <= 0 {
				m.getSlotNext(now)
			}
		}
		return p, 0, true
	}
	next = p.TTS
	if m.slotOn {
		next = max(p.TTS, m.slotNext)
	}
	return Packet{}, next, false
}

// getSlotNext is get_slot_next.
func (m *Model) getSlotNext(now int64) {
	s := m.c.Slot
	var d int64
	if s.Dist == nil && s.DistJitter == 0 {
		d = int64(s.MinDelay) + int64((uint64(s.MaxDelay-s.MinDelay)*uint64(m.rnd.next()))>>32)
	} else {
		d = m.tabledist(int64(s.DistDelay), int64(min(s.DistJitter, math.MaxInt32)), nil, s.Dist)
	}
	m.slotNext = now + d
	m.pktsLeft, m.bytesLeft = bound(s.MaxPackets), bound(s.MaxBytes)
}

// lost is loss_event.
func (m *Model) lost() bool {
	lm := m.c.LossModel
	if lm == nil {
		return m.c.Loss != 0 && uint32(m.c.Loss) >= m.lossCor.get(&m.rnd)
	}
	if lm.GE {
		switch m.lossState {
		case 1:
			if m.rnd.next() < uint32(lm.P) {
				m.lossState = 2
			}
			if m.rnd.next() < uint32(lm.K1) {
				return true
			}
		case 2:
			if m.rnd.next() < uint32(lm.R) {
				m.lossState = 1
			}
			if m.rnd.next() > uint32(lm.H) {
				return true
			}
		}
		return false
	}
	r := m.rnd.next()
	switch m.lossState {
	case 1:
		if r < uint32(lm.P14) {
			m.lossState = 4
			return true
		} else if r < uint32(lm.P13)+uint32(lm.P14) {
			m.lossState = 3
			return true
		}
	case 2:
		if r < uint32(lm.P23) {
			m.lossState = 3
			return true
		}
	case 3:
		if r < uint32(lm.P32) {
			m.lossState = 2
		} else if r < uint32(lm.P31)+uint32(lm.P32) {
			m.lossState = 1
		} else {
			return true
		}
	case 4:
		m.lossState = 1
	}
	return false
}

// tabledist is tabledist.
func (m *Model) tabledist(mu, sigma int64, st *crnd, t netem.Table) int64 {
	if sigma == 0 {
		return mu
	}
	var r uint32
	if st == nil {
		r = m.rnd.next()
	} else {
		r = st.get(&m.rnd)
	}
	if t == nil {
		return int64(r%(2*uint32(sigma))) + mu - sigma
	}
	e := int64(t[r%uint32(len(t))])
	x := (sigma % netem.DistScale) * e
	if x >= 0 {
		x += netem.DistScale / 2
	} else {
		x -= netem.DistScale / 2
	}
	return x/netem.DistScale + (sigma/netem.DistScale)*e + mu
}

// crnd is crndstate and get_crandom.
type crnd struct{ last, rho uint32 }

func (c *crnd) get(r *lfsr) uint32 {
	v := r.next()
	if c.rho == 0 {
		return v
	}
	rho := uint64(c.rho) + 1
	c.last = uint32((uint64(v)*((1<<32)-rho) + uint64(c.last)*rho) >> 32)
	return c.last
}

// lfsr is prandom's state: prandom_seed_state and prandom_u32_state.
type lfsr struct{ s [4]uint32 }

func (l *lfsr) seed(seed uint64) {
	i := uint32((seed >> 32) ^ (seed << 10) ^ seed)
	for k, least := range [4]uint32{2, 8, 16, 128} {
		l.s[k] = i
		if i < least {
			l.s[k] = i + least
		}
	}
}

// below is __get_random_u32_below's draw in [0, n): the high half of n
// times a draw, drawn again while the low half is under 2^32 mod n.
func (l *lfsr) below(n uint32) uint32 {
	m := uint64(l.next()) * uint64(n)
	if uint32(m) < n {
		for t := -n % n; uint32(m) < t; {
			m = uint64(l.next()) * uint64(n)
		}
	}
	return uint32(m >> 32)
}

func (l *lfsr) next() uint32 {
	step := func(s, a, b, c, d uint32) uint32 { return ((s & c) << d) ^ (((s << a) ^ s) >> b) }
	l.s[0] = step(l.s[0], 6, 13, 4294967294, 18)
	l.s[1] = step(l.s[1], 2, 27, 4294967288, 2)
	l.s[2] = step(l.s[2], 13, 21, 4294967280, 7)
	l.s[3] = step(l.s[3], 3, 12, 4294967168, 13)
	return l.s[0] ^ l.s[1] ^ l.s[2] ^ l.s[3]
}
