// Package codel is CoDel, the Controlled-Delay AQM (RFC 8289), as Linux's
// include/net/codel.h and codel_impl.h implement it, for one queue: the
// state a flow keeps (Vars), the knobs (Params), and the dequeue-time
// decision to drop or mark the head packet (Dequeue).
//
// It keeps Linux's arithmetic so that the same arrivals give the same
// drops at the same instants: time in units of 1024 ns in 32 bits
// (compared with wrap-around), the drop interval scaled by a 16-bit fixed
// point reciprocal square root of the drop count kept up to date by one
// Newton step a drop, and the count reused from the last dropping state
// when the queue goes bad again soon after it went good.
package codel

import "time"

// Time is Linux's codel_time_t: nanoseconds >> Shift, in 32 bits.
type Time uint32

// Shift is how many bits of nanoseconds a Time drops (1024 ns units).
const Shift = 10

// TimeOf returns ns nanoseconds as a Time.
func TimeOf(ns int64) Time { return Time(uint64(ns) >> Shift) }

// DurationOf returns d as a Time interval.
func DurationOf(d time.Duration) Time { return Time(uint64(d) >> Shift) }

// before and after compare times with wrap-around, as codel_time_before.
func before(a, b Time) bool  { return int32(a-b) < 0 }
func after(a, b Time) bool   { return int32(a-b) > 0 }
func afterEq(a, b Time) bool { return int32(a-b) >= 0 }

// recInvSqrtShift is how far the 16-bit reciprocal square root is shifted
// into a 32-bit fraction.
const recInvSqrtShift = 32 - 16

// Params are a queue's CoDel knobs.
type Params struct {
	// Target is the acceptable standing delay; Interval the time it may be
	// exceeded before CoDel acts (about a worst-case RTT).
	Target   Time
	Interval Time
	// MTU: a queue holding no more than this many bytes is never dropped
	// from (Linux: the device's MTU plus its header).
	MTU uint32
	// ECN marks ECN-capable packets instead of dropping them.
	ECN bool
	// CEThreshold, with CEThresholdOn, marks CE every ECN-capable packet
	// dequeued after a sojourn above it, whatever CoDel decides (Linux's
	// ce_threshold, for DCTCP-style senders that want an early, shallow
	// signal), counted in Stats.CEMarks; with CEMask not 0, only packets
	// whose DS field (DSCP and ECN bits) masked with CEMask is
	// CESelector (ce_threshold_selector).
	CEThreshold   Time
	CEThresholdOn bool
	CESelector    uint8
	CEMask        uint8
}

// Vars is one queue's CoDel state.
type Vars struct {
	// Count is the drops (or marks) of the current dropping state,
	// lastCount those of the previous one.
	Count     uint32
	lastCount uint32
	// Dropping says the queue is in dropping state.
	Dropping bool
	// recInvSqrt is 1/sqrt(Count), 16-bit fixed point.
	recInvSqrt uint16
	// firstAboveTime is when the sojourn time, above Target since then,
	// has been so for an Interval; 0 when it is below.
	firstAboveTime Time
	// dropNext is when the next drop is due in dropping state.
	dropNext Time
	// ldelay is the last packet's sojourn time.
	ldelay Time
}

// Stats are what CoDel counts across a qdisc's queues.
type Stats struct {
	// MaxPacket is the largest packet seen at dequeue.
	MaxPacket uint32
	// ECNMarks counts packets marked CE instead of dropped; CEMarks those
	// marked for a sojourn above Params.CEThreshold.
	ECNMarks uint64
	CEMarks  uint64
	// Drops and DropBytes count packets dropped at dequeue.
	Drops     uint64
	DropBytes uint64
}

// newtonStep updates recInvSqrt for Count: x' = x/2 * (3 - Count*x^2),
// in Linux's fixed point.
func (v *Vars) newtonStep() {
	invsqrt := uint32(v.recInvSqrt) << recInvSqrtShift
	invsqrt2 := uint32((uint64(invsqrt) * uint64(invsqrt)) >> 32)
	val := (uint64(3) << 32) - uint64(v.Count)*uint64(invsqrt2)
	val >>= 2 // room for the multiply
	val = (val * uint64(invsqrt)) >> (32 - 2 + 1)
	v.recInvSqrt = uint16(val >> recInvSqrtShift)
}

// controlLaw is t + interval/sqrt(Count).
func (v *Vars) controlLaw(t, interval Time) Time {
	return t + Time((uint64(interval)*uint64(uint32(v.recInvSqrt)<<recInvSqrtShift))>>32)
}

// Packet is what CoDel needs of a queue's head packet.
type Packet interface {
	// Len is the packet's length in bytes.
	Len() uint32
	// Enqueued is when it was queued.
	Enqueued() Time
	// MarkCE sets ECN's CE mark if the packet is ECN-capable, and reports
	// whether it did (or it was marked already).
	MarkCE() bool
}

// DSFielder is a Packet that has a DS field, for Params.CEMask: the IPv4
// TOS or IPv6 traffic class byte, ok false for a packet that is neither
// (Linux's skb_get_dsfield). A Packet that is not one matches no mask.
type DSFielder interface {
	DSField() (ds uint8, ok bool)
}

// Flow is the queue CoDel manages (one flow's, in fq_codel): it hands
// the head packet over and drops it.
type Flow[P Packet] interface {
	// Dequeue removes and returns the head packet; ok is false when the
	// queue is empty.
	Dequeue() (p P, ok bool)
	// Drop releases a packet CoDel dropped.
	Drop(p P)
	// Backlog is the bytes queued now.
	Backlog() uint32
}

// shouldDrop is codel_should_drop: whether the head's sojourn time has
// been above Target for an Interval (and the queue holds more than an MTU).
func shouldDrop[P Packet](v *Vars, p P, ok bool, backlog uint32, par *Params, st *Stats, now Time) bool {
	if !ok {
		v.firstAboveTime = 0
		return false
	}
	v.ldelay = now - p.Enqueued()
	if l := p.Len(); l > st.MaxPacket {
		st.MaxPacket = l
	}
	if before(v.ldelay, par.Target) || backlog <= par.MTU {
		v.firstAboveTime = 0 // went below: stay below for an interval
		return false
	}
	if v.firstAboveTime == 0 {
		v.firstAboveTime = now + par.Interval
		return false
	}
	return after(now, v.firstAboveTime)
}

// Dequeue is codel_dequeue: it takes the head packet from q at now and,
// while the queue is in dropping state and a drop is due, drops (or marks
// and keeps) it and takes the next, entering or leaving dropping state as
// the sojourn time says; then marks the packet it returns CE if its
// sojourn was above Params.CEThreshold. ok is false when q ran empty.
func Dequeue[P Packet](q Flow[P], v *Vars, par *Params, st *Stats, now Time) (p P, ok bool) {
	p, ok = dequeue(q, v, par, st, now)
	if ok && par.CEThresholdOn && after(v.ldelay, par.CEThreshold) {
		mark := true
		if par.CEMask != 0 {
			d, has := any(p).(DSFielder)
			mark = false
			if has {
				ds, isIP := d.DSField()
				mark = isIP && ds&par.CEMask == par.CESelector
			}
		}
		if mark && p.MarkCE() {
			st.CEMarks++
		}
	}
	return p, ok
}

// dequeue is codel_dequeue up to its end label: Dequeue without the CE
// threshold's mark.
func dequeue[P Packet](q Flow[P], v *Vars, par *Params, st *Stats, now Time) (p P, ok bool) {
	p, ok = q.Dequeue()
	if !ok {
		v.Dropping = false
		return p, false
	}
	drop := shouldDrop(v, p, ok, q.Backlog(), par, st, now)
	switch {
	case v.Dropping && !drop:
		v.Dropping = false // sojourn time below target: leave dropping state
	case v.Dropping && afterEq(now, v.dropNext):
		// Time for the next drop, and perhaps more: a large backlog may
		// make the next one due at once.
		for v.Dropping && afterEq(now, v.dropNext) {
			v.Count++ // wrap-around is harmless: no divide
			v.newtonStep()
			if par.ECN && p.MarkCE() {
				st.ECNMarks++
				v.dropNext = v.controlLaw(v.dropNext, par.Interval)
				return p, true
			}
			st.DropBytes += uint64(p.Len())
			st.Drops++
			q.Drop(p)
			p, ok = q.Dequeue()
			if !shouldDrop(v, p, ok, q.Backlog(), par, st, now) {
				v.Dropping = false
			} else {
				v.dropNext = v.controlLaw(v.dropNext, par.Interval)
			}
		}
	case !v.Dropping && drop:
		if par.ECN && p.MarkCE() {
			st.ECNMarks++
		} else {
			st.DropBytes += uint64(p.Len())
			st.Drops++
			q.Drop(p)
			p, ok = q.Dequeue()
			shouldDrop(v, p, ok, q.Backlog(), par, st, now)
		}
		v.Dropping = true
		// If the queue went bad again soon after it went good, the drop
		// rate that controlled it last time is a good start.
		if delta := v.Count - v.lastCount; delta > 1 && before(now-v.dropNext, 16*par.Interval) {
			v.Count = delta
			v.newtonStep() // imprecise for now; later steps converge
		} else {
			v.Count = 1
			v.recInvSqrt = ^uint16(0)
		}
		v.lastCount = v.Count
		v.dropNext = v.controlLaw(now, par.Interval)
	}
	return p, ok
}
