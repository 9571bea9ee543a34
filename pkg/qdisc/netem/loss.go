package netem

import (
	"fmt"
	"math"
)

// lossKind is how netem decides a packet is lost (Linux's loss_model).
type lossKind uint8

const (
	// lossRandom: each packet independently (or correlated) with a
	// probability (tc's `loss random PERCENT [CORRELATION]`).
	lossRandom lossKind = iota
	// loss4State: the 4-state Markov chain of Salsano et al.'s GI model
	// (tc's `loss state p13 [p31 [p32 [p23 [p14]]]]`).
	loss4State
	// lossGE: the Gilbert-Elliott chain, a good and a bad state each
	// with its own loss (tc's `loss gemodel p [r [1-h [1-k]]]`).
	lossGE
)

// The 4-state chain's states (Linux's _4_state_model).
const (
	txInGap     = 1 // sent, within a gap period
	txInBurst   = 2 // sent, within a burst
	lostInBurst = 3 // lost, within a burst
	lostInGap   = 4 // an isolated loss within a gap
)

// The Gilbert-Elliott chain's states (Linux's GE_state_model).
const (
	goodState = 1
	badState  = 2
)

// lossGen decides, packet by packet, which are lost, as Linux's
// loss_event does, its probabilities in 32-bit fixed point (2^32-1 is
// 100%).
type lossGen struct {
	kind lossKind
	// random: the probability and its correlation.
	p    uint32
	corr correlated
	// The chains: their state and transition probabilities, a1..a5 as
	// Linux names them (4-state: p13, p31, p32, p14, p23; GE: p, r, h,
	// 1-k).
	state              uint8
	a1, a2, a3, a4, a5 uint32
}

// lost draws from p whether the next packet is lost.
func (l *lossGen) lost(p *prng) bool {
	switch l.kind {
	case loss4State:
		return l.fourState(p)
	case lossGE:
		return l.gilbertElliott(p)
	default:
		return l.p != 0 && l.p >= l.corr.draw(p)
	}
}

// fourState is Linux's loss_4state: one draw decides the next state
// and whether this packet is lost.
func (l *lossGen) fourState(p *prng) bool {
	rnd := p.next()
	switch l.state {
	case txInGap:
		switch {
		case rnd < l.a4:
			l.state = lostInGap
			return true
		case rnd < l.a1+l.a4:
			l.state = lostInBurst
			return true
		default:
			l.state = txInGap
		}
	case txInBurst:
		if rnd < l.a5 {
			l.state = lostInBurst
			return true
		}
		l.state = txInBurst
	case lostInBurst:
		switch {
		case rnd < l.a3:
			l.state = txInBurst
		case rnd < l.a2+l.a3:
			l.state = txInGap
		default:
			l.state = lostInBurst
			return true
		}
	case lostInGap:
		l.state = txInGap
	}
	return false
}

// gilbertElliott is Linux's loss_gilb_ell: one draw moves the chain, a
// second decides the packet's loss by the state it found (before the
// move): 1-k (a4) in the good state, 1-h (a draw above h, a3) in the
// bad.
func (l *lossGen) gilbertElliott(p *prng) bool {
	switch l.state {
	case goodState:
		if p.next() < l.a1 {
			l.state = badState
		}
		if p.next() < l.a4 {
			return true
		}
	case badState:
		if p.next() < l.a2 {
			l.state = goodState
		}
		if p.next() > l.a3 {
			return true
		}
	}
	return false
}

// GilbertElliott are the Gilbert-Elliott chain's parameters as
// probabilities: P of moving from good to bad, R from bad to good, and
// the loss in each, 1-K in good and 1-H in bad.
type GilbertElliott struct {
	P, R, OneMinusH, OneMinusK float64
}

// GilbertFromBurst derives the simple Gilbert chain (a bad state that
// loses every packet, a good one that loses none) whose average loss is
// loss and whose bursts of consecutive losses are burst packets long on
// average: a burst ends with probability R = 1/burst at each packet,
// and the chain is bad loss of the time, P/(P+R) = loss, so P =
// loss*R/(1-loss). loss must be in (0, 1) and burst at least 1; a P past
// 1 (bursts too short for so much loss) is refused, saying what fits.
func GilbertFromBurst(loss, burst float64) (GilbertElliott, error) {
	switch {
	case !(loss > 0 && loss < 1):
		return GilbertElliott{}, fmt.Errorf("an average loss of %v: want more than 0%% and less than 100%%", loss)
	case !(burst >= 1) || math.IsInf(burst, 1):
		return GilbertElliott{}, fmt.Errorf("a mean burst of %v packets: want 1 or more", burst)
	}
	r := 1 / burst
	p := loss * r / (1 - loss)
	if p > 1 {
		return GilbertElliott{}, fmt.Errorf("an average loss of %.4g%% in bursts of %.4g packets needs a good state that lasts less than a packet; give bursts of at least %.4g packets", 100*loss, burst, loss/(1-loss))
	}
	return GilbertElliott{P: p, R: r, OneMinusH: 1, OneMinusK: 0}, nil
}

// String shows the parameters as tc's gemodel words.
func (g GilbertElliott) String() string {
	return fmt.Sprintf("loss gemodel %s %s %s %s", pct(g.P), pct(g.R), pct(g.OneMinusH), pct(g.OneMinusK))
}

// pct writes a probability as tc writes a percentage.
func pct(v float64) string {
	return fmt.Sprintf("%g%%", math.Round(v*1e8)/1e6)
}

// prob32 is a probability in netem's 32-bit fixed point (tc's
// get_percent: 2^32-1 is 100%).
func prob32(v float64) uint32 {
	return uint32(math.Round(min(max(v, 0), 1) * math.MaxUint32))
}

// model returns g as the Gilbert-Elliott LossModel (tc's gemodel words
// p, r, 1-h, 1-k; the kernel's h).
func (g GilbertElliott) model() *LossModel {
	return &LossModel{GE: true, P: percentOf(g.P), R: percentOf(g.R), H: percentOf(1 - g.OneMinusH), K1: percentOf(g.OneMinusK)}
}

// geGen returns the lossGen of g, in the good state (Linux's
// get_loss_clg: a1 p, a2 r, a3 h, a4 1-k).
func (g GilbertElliott) geGen() lossGen {
	return lossGen{kind: lossGE, state: goodState, a1: prob32(g.P), a2: prob32(g.R), a3: prob32(1 - g.OneMinusH), a4: prob32(g.OneMinusK)}
}
