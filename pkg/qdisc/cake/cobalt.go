package cake

import (
	"math"
	"math/rand/v2"

	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// COBALT is cake's AQM (sch_cake.c's cobalt_* functions): CoDel, whose
// control law's 1/sqrt(count) is cached for small counts and else
// refined by one Newton step, and BLUE, a drop probability that rises
// while the memory limit drops from a flow and falls while the flow is
// found empty, for flows that do not answer CoDel. Times are ns on the
// caller's step clock, as ktime_get's are in Linux.

// cobaltParams are a tin's COBALT parameters (struct cobalt_params, set
// by cake_set_rate).
type cobaltParams struct {
	// interval is CoDel's first delay and the control law's scale (ns).
	interval uint64
	// target is the sojourn CoDel tolerates, and the least time between
	// two changes of BLUE's probability (ns).
	target uint64
	// mtuTime is the time one MTU-sized packet takes at the tin's rate.
	mtuTime uint64
	// pInc and pDec are BLUE's steps up and down, in Q0.32.
	pInc, pDec uint32
}

// cobaltVars are a flow's COBALT state (struct cobalt_vars, zeroed by
// cobalt_vars_init when cake starts).
type cobaltVars struct {
	// count is CoDel's signal count: the control law's sqrt(count).
	count uint32
	// recInvSqrt is 1/sqrt(count) in Q0.32.
	recInvSqrt uint32
	// dropNext is when CoDel signals next while dropping; otherwise an
	// activity timeout (see shouldDrop).
	dropNext int64
	// blueTimer is when BLUE's probability last changed.
	blueTimer int64
	// pDrop is BLUE's drop probability in Q0.32.
	pDrop uint32
	// dropping is CoDel's state: the sojourn is above target.
	dropping bool
	// ecnMarked reports that shouldDrop's last signal was a CE mark.
	ecnMarked bool
}

// invSqrtCache is Linux's inv_sqrt_cache: 1/sqrt(count) in Q0.32 for
// counts below 16, as eight Newton steps reach it (one step is too
// coarse there), counts 0 and 1 both at ~0, the nearest to 1.0.
var invSqrtCache = [16]uint32{
	0xffffffff, 0xffffffff, 3037000500, 2479700525,
	2147483647, 1920767767, 1753413056, 1623345051,
	1518500250, 1431655765, 1358187914, 1294981364,
	1239850263, 1191209601, 1147878294, 1108955788,
}

// reciprocalScale is Linux's reciprocal_scale: val scaled by ep/2^32, in
// 32 bits.
func reciprocalScale(val, ep uint32) uint32 {
	return uint32(uint64(val) * uint64(ep) >> 32)
}

// control is cobalt_control, CoDel's control law t + interval/sqrt(count)
// with recInvSqrt for 1/sqrt(count). As in Linux, the interval goes into
// reciprocal_scale as a u32: one of 2^32 ns (4.29s) or more counts only
// modulo 2^32.
func control(t int64, interval uint64, recInvSqrt uint32) int64 {
	return t + int64(reciprocalScale(uint32(interval), recInvSqrt))
}

// newtonStep is cobalt_newton_step: one step of x' = x(3 - count x^2)/2
// towards 1/sqrt(count), in Linux's fixed point (the product shifted
// down by 2 first so that it fits in 64 bits).
func (v *cobaltVars) newtonStep() {
	x := uint64(v.recInvSqrt)
	sq := uint64(uint32(x * x >> 32))
	y := (3<<32 - uint64(v.count)*sq) >> 2
	v.recInvSqrt = uint32(y * x >> 31)
}

// invSqrt is cobalt_invsqrt: recInvSqrt for the current count, from the
// cache below its end, else by a Newton step from the last value.
func (v *cobaltVars) invSqrt() {
	if int(v.count) < len(invSqrtCache) {
		v.recInvSqrt = invSqrtCache[v.count]
		return
	}
	v.newtonStep()
}

// reschedule follows a change of count: recInvSqrt for it, and dropNext
// moved on by the control law. It returns the new dropNext.
func (v *cobaltVars) reschedule(interval uint64) int64 {
	v.invSqrt()
	v.dropNext = control(v.dropNext, interval, v.recInvSqrt)
	return v.dropNext
}

// blueDue reports whether BLUE may change its probability at now: more
// than a target since it last did. Linux compares the s64 difference
// with the u64 target, that is as unsigned.
func (v *cobaltVars) blueDue(p *cobaltParams, now int64) bool {
	return uint64(now-v.blueTimer) > p.target
}

// queueFull is cobalt_queue_full, for a packet the memory limit dropped
// from the flow: BLUE's probability rises by pInc (saturating) at most
// once a target, and CoDel is made to signal at once. It reports whether
// BLUE went from rest to active.
func (v *cobaltVars) queueFull(p *cobaltParams, now int64) bool {
	woke := false
	if v.blueDue(p, now) {
		woke = v.pDrop == 0
		if v.pDrop > math.MaxUint32-p.pInc {
			v.pDrop = math.MaxUint32
		} else {
			v.pDrop += p.pInc
		}
		v.blueTimer = now
	}
	v.dropping = true
	v.dropNext = now
	v.count = max(v.count, 1)
	return woke
}

// queueEmpty is cobalt_queue_empty, for a flow served and found empty:
// BLUE's probability falls by pDec (to 0 at least) at most once a
// target, CoDel stops dropping, and a count whose time has come decays
// by one. It reports whether BLUE went from active to rest.
func (v *cobaltVars) queueEmpty(p *cobaltParams, now int64) bool {
	rested := false
	if v.pDrop != 0 && v.blueDue(p, now) {
		v.pDrop -= min(v.pDrop, p.pDec)
		v.blueTimer = now
		rested = v.pDrop == 0
	}
	v.dropping = false
	if v.count != 0 && now-v.dropNext >= 0 {
		v.count--
		v.reschedule(p.interval)
	}
	return rested
}

// overTarget is cobalt_should_drop's test of a sojourn (ns): above the
// target, and above the time two MTUs of each of bulkFlows flows and
// four MTUs take, so that a slow link's own serialisation is not taken
// for a standing queue.
func (p *cobaltParams) overTarget(sojourn uint64, bulkFlows uint32) bool {
	return sojourn > p.target && sojourn > p.mtuTime*uint64(bulkFlows)*2 && sojourn > p.mtuTime*4
}

// shouldDrop is cobalt_should_drop for pkt, enqueued at enq and dequeued
// at now from a flow of a tin with bulkFlows bulk flows (the caller
// passes 0 but in ingress mode, as cake_dequeue does): it reports whether
// to drop the packet. CoDel's signal is a CE mark on an ECN-capable
// packet (ecnMarked), else a drop; BLUE's is always a drop, with
// probability pDrop from rnd's next number, drawn only while pDrop is
// not 0 (Linux calls get_random_u32 only then).
func (v *cobaltVars) shouldDrop(p *cobaltParams, now, enq int64, bulkFlows uint32, pkt *stack.PacketBuffer, rnd *rand.PCG) bool {
	// schedule's sign is whether now has reached dropNext; it is taken
	// before dropNext moves and retaken after, and due keeps its first
	// answer for a flow that has a count.
	schedule := now - v.dropNext
	due := v.count != 0 && schedule >= 0
	v.ecnMarked = false

	if p.overTarget(uint64(now-enq), bulkFlows) {
		if !v.dropping {
			// The first signal comes an interval (scaled by the last
			// recInvSqrt) after the sojourn went over.
			v.dropping = true
			v.dropNext = control(now, p.interval, v.recInvSqrt)
		}
		v.count = max(v.count, 1)
	} else {
		v.dropping = false
	}

	drop := false
	if due && v.dropping {
		v.ecnMarked = markCE(pkt)
		drop = !v.ecnMarked
		if v.count != math.MaxUint32 {
			v.count++
		}
		schedule = now - v.reschedule(p.interval)
	} else {
		// Not dropping: the count decays by one for each interval
		// (scaled as it falls) that has passed since dropNext.
		for due {
			v.count--
			schedule = now - v.reschedule(p.interval)
			due = v.count != 0 && schedule >= 0
		}
	}

	if v.pDrop != 0 && uint32(rnd.Uint64()) < v.pDrop {
		drop = true
	}

	// dropNext doubles as an activity timeout: an interval on with no
	// count, else now for a flow behind its schedule that kept its
	// packet.
	switch {
	case v.count == 0:
		v.dropNext = now + int64(p.interval)
	case schedule > 0 && !drop:
		v.dropNext = now
	}
	return drop
}
