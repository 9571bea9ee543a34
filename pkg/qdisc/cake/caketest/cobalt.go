package caketest

// cobaltParams is struct cobalt_params: per tin, set by cake_set_rate.
type cobaltParams struct {
	interval, target, mtuTime uint64 // ns
	pInc, pDec                uint32
}

// cobaltVars is struct cobalt_vars: per flow.
type cobaltVars struct {
	count      uint32
	recInvSqrt uint32
	dropNext   int64
	blueTimer  int64
	pDrop      uint32
	dropping   bool
	ecnMarked  bool
}

// recInvSqrtCache is sch_cake.c's inv_sqrt_cache: 1/sqrt(count) in 0.32
// fixed point for counts below 16, with count 0 and 1 both ~0 (as close
// to 1.0 as 32 bits hold). These are the kernel's constants.
var recInvSqrtCache = [16]uint32{
	0xffffffff, 0xffffffff, 3037000500, 2479700525,
	2147483647, 1920767767, 1753413056, 1623345051,
	1518500250, 1431655765, 1358187914, 1294981364,
	1239850263, 1191209601, 1147878294, 1108955788,
}

// newtonStep is cobalt_newton_step: one Newton iteration of
// rec_inv_sqrt towards 1/sqrt(count), in Linux's fixed point.
func (v *cobaltVars) newtonStep() {
	inv := uint64(v.recInvSqrt)
	inv2 := uint64(uint32((inv * inv) >> 32))
	val := (uint64(3) << 32) - uint64(v.count)*inv2
	val >>= 2 // keeps the multiply below within 64 bits
	val = (val * inv) >> (32 - 2 + 1)
	v.recInvSqrt = uint32(val)
}

// invSqrt is cobalt_invsqrt: the cache below 16, else a Newton step from
// the previous value.
func (v *cobaltVars) invSqrt() {
	if v.count < uint32(len(recInvSqrtCache)) {
		v.recInvSqrt = recInvSqrtCache[v.count]
	} else {
		v.newtonStep()
	}
}

// reciprocalScale is reciprocal_scale: val*ep_ro/2^32 on 32-bit inputs.
func reciprocalScale(val, epRo uint32) uint32 {
	return uint32((uint64(val) * uint64(epRo)) >> 32)
}

// cobaltControl is cobalt_control: t + interval/sqrt(count). Linux passes
// the u64 interval to reciprocal_scale's u32 parameter: it is truncated
// to 32 bits (intervals above 4.29 s wrap), and so is it here.
func cobaltControl(t int64, interval uint64, recInvSqrt uint32) int64 {
	return t + int64(reciprocalScale(uint32(interval), recInvSqrt))
}

// queueFull is cobalt_queue_full, called when a packet of the flow is
// dropped for overflow. It reports whether BLUE went from quiescent to
// active.
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

// queueEmpty is cobalt_queue_empty, called when the flow was serviced and
// found empty. It reports whether BLUE went from active to quiescent.
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
		v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
	}
	return down
}

// dropVerdict says why cobaltShouldDrop dropped a packet.
type dropVerdict struct {
	drop  bool
	codel bool // CoDel's schedule was due and the packet could not be marked
	blue  bool // BLUE's random test
}

// shouldDrop is cobalt_should_drop for the packet e, freshly dequeued at
// now: CoDel's schedule (marking CE where it can, via e's packet) and
// BLUE's random drop. bulkFlows is the tin's bulk flow count in ingress
// mode, else 0. rnd is get_random_u32, called only when BLUE is active.
func (v *cobaltVars) shouldDrop(p *cobaltParams, now int64, e *entry, bulkFlows uint32, rnd func() uint32) dropVerdict {
	var verdict dropVerdict
	sojourn := uint64(now - e.enqueueTime)
	schedule := now - v.dropNext
	overTarget := sojourn > p.target &&
		sojourn > p.mtuTime*uint64(bulkFlows)*2 &&
		sojourn > p.mtuTime*4
	nextDue := v.count != 0 && schedule >= 0

	v.ecnMarked = false

	if overTarget {
		if !v.dropping {
			v.dropping = true
			v.dropNext = cobaltControl(now, p.interval, v.recInvSqrt)
		}
		if v.count == 0 {
			v.count = 1
		}
	} else if v.dropping {
		v.dropping = false
	}

	if nextDue && v.dropping {
		// Mark if the packet is ECN-capable, else drop.
		v.ecnMarked = e.pkt.setCE()
		verdict.drop = !v.ecnMarked
		verdict.codel = verdict.drop
		v.count++
		if v.count == 0 {
			v.count--
		}
		v.invSqrt()
		v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
		schedule = now - v.dropNext
	} else {
		for nextDue {
			v.count--
			v.invSqrt()
			v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
			schedule = now - v.dropNext
			nextDue = v.count != 0 && schedule >= 0
		}
	}

	// BLUE, without ECN.
	if v.pDrop != 0 && rnd() < v.pDrop {
		verdict.blue = true
		verdict.drop = true
	}

	// drop_next doubles as an activity timeout.
	if v.count == 0 {
		v.dropNext = now + int64(p.interval)
	} else if schedule > 0 && !verdict.drop {
		v.dropNext = now
	}
	return verdict
}
