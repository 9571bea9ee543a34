package cake

import (
	"math/rand/v2"

	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// COBALT, cake's AQM: CoDel with its control law's inverse square root
// cached for small counts, and BLUE's drop probability for flows that do
// not answer CoDel (sch_cake.c's cobalt_*). Times are ns on the
// caller's step clock.

// cobaltParams are a tin's COBALT parameters (cake_set_rate sets them).
type cobaltParams struct {
	interval uint64
	target   uint64
	mtuTime  uint64
	pInc     uint32
	pDec     uint32
}

// cobaltVars are a flow's COBALT state.
type cobaltVars struct {
	count      uint32
	recInvSqrt uint32
	dropNext   int64
	blueTimer  int64
	pDrop      uint32
	dropping   bool
	ecnMarked  bool
}

// invSqrtCache holds 1/sqrt(count) in Q0.32 for counts below 16, each
// the value eight Newton steps reach (Linux's inv_sqrt_cache, which the
// test derives).
var invSqrtCache = [16]uint32{
	0xffffffff, 0xffffffff, 3037000500, 2479700525,
	2147483647, 1920767767, 1753413056, 1623345051,
	1518500250, 1431655765, 1358187914, 1294981364,
	1239850263, 1191209601, 1147878294, 1108955788,
}

// newtonStep refines recInvSqrt towards 1/sqrt(count): x(3 - count x^2)/2.
func (v *cobaltVars) newtonStep() {
	x := uint64(v.recInvSqrt)
	x2 := (x * x) >> 32
	val := (uint64(3) << 32) - uint64(v.count)*x2
	val >>= 2
	val = (val * x) >> (32 - 2 + 1)
	v.recInvSqrt = uint32(val)
}

// invSqrt sets recInvSqrt for count: from the cache, or a Newton step.
func (v *cobaltVars) invSqrt() {
	if v.count < uint32(len(invSqrtCache)) {
		v.recInvSqrt = invSqrtCache[v.count]
	} else {
		v.newtonStep()
	}
}

// control is CoDel's control law, t + interval/sqrt(count).
func control(t int64, interval uint64, recInvSqrt uint32) int64 {
	return t + int64((interval*uint64(recInvSqrt))>>32)
}

// queueFull is cobalt_queue_full, for a packet dropped because the qdisc
// is over its memory: BLUE's probability rises (at most once a target).
// It reports whether BLUE went from rest to active.
func (v *cobaltVars) queueFull(p *cobaltParams, now int64) bool {
	up := false
	if now-v.blueTimer > int64(p.target) {
		up = v.pDrop == 0
		v.pDrop += p.pInc
		if v.pDrop < p.pInc {
			v.pDrop = ^uint32(0)
		}
		v.blueTimer = now
	}
	v.dropping = true
	v.dropNext = now
	if v.count == 0 {
		v.count = 1
	}
	return up
}

// queueEmpty is cobalt_queue_empty, for a flow found empty: BLUE's
// probability falls, CoDel's count decays. It reports whether BLUE went
// from active to rest.
func (v *cobaltVars) queueEmpty(p *cobaltParams, now int64) bool {
	down := false
	if v.pDrop != 0 && now-v.blueTimer > int64(p.target) {
		if v.pDrop < p.pDec {
			v.pDrop = 0
		} else {
			v.pDrop -= p.pDec
		}
		v.blueTimer = now
		down = v.pDrop == 0
	}
	v.dropping = false
	if v.count != 0 && now-v.dropNext >= 0 {
		v.count--
		v.invSqrt()
		v.dropNext = control(v.dropNext, p.interval, v.recInvSqrt)
	}
	return down
}

// shouldDrop is cobalt_should_drop for pkt, enqueued at enq and dequeued
// now from a flow of a tin with bulkFlows bulk flows (counted only in
// ingress mode): it reports whether to drop it. CoDel sets CE on an
// ECN-capable packet instead of dropping it; BLUE always drops. rnd is
// the source of BLUE's uniform random number, drawn from only while BLUE
// is active (pDrop != 0), as Linux calls get_random_u32 only then.
func (v *cobaltVars) shouldDrop(p *cobaltParams, now, enq int64, bulkFlows uint32, pkt *stack.PacketBuffer, rnd *rand.PCG) bool {
	sojourn := uint64(now - enq)
	schedule := now - v.dropNext
	overTarget := sojourn > p.target && sojourn > p.mtuTime*uint64(bulkFlows)*2 && sojourn > p.mtuTime*4
	nextDue := v.count != 0 && schedule >= 0
	drop := false
	v.ecnMarked = false
	if overTarget {
		if !v.dropping {
			v.dropping = true
			v.dropNext = control(now, p.interval, v.recInvSqrt)
		}
		if v.count == 0 {
			v.count = 1
		}
	} else if v.dropping {
		v.dropping = false
	}
	if nextDue && v.dropping {
		v.ecnMarked = markCE(pkt)
		drop = !v.ecnMarked
		v.count++
		if v.count == 0 {
			v.count--
		}
		v.invSqrt()
		v.dropNext = control(v.dropNext, p.interval, v.recInvSqrt)
		schedule = now - v.dropNext
	} else {
		for nextDue {
			v.count--
			v.invSqrt()
			v.dropNext = control(v.dropNext, p.interval, v.recInvSqrt)
			schedule = now - v.dropNext
			nextDue = v.count != 0 && schedule >= 0
		}
	}
	if v.pDrop != 0 && uint32(rnd.Uint64()) < v.pDrop {
		drop = true
	}
	if v.count == 0 {
		v.dropNext = now + int64(p.interval)
	} else if schedule > 0 && !drop {
		v.dropNext = now
	}
	return drop
}
