// Package rate turns a byte rate into transmission times the way Linux's
// packet scheduler does, and reads and prints rates and sizes in tc's units.
//
// A Rate precomputes Linux's psched_ratecfg_precompute__ multiplier and shift
// once (net/sched/sch_generic.c), so that the time to send a packet is a
// multiply and a shift, with no division on the packet path.
//
// Where this differs from Linux: Linux keeps a 32-bit multiplier, and its
// psched_l2t_ns can come out up to about 1.4 ns short of len*1e9/rate (it
// misses max(1 ns, 2^-30 of the time) for about 0.5% of random rate/length
// pairs). Rate keeps Linux's multiplier and shift (Mult, Shift) and extends
// the same reciprocal by 32 more bits, rounded up; TimeNS multiplies with a
// 64x64->128-bit product (one MULQ on amd64) and returns exactly
// floor(len*1e9/rate) for every rate up to 12.5 GB/s and every length up to
// 2^31 bytes. It is never less than Linux's value, and above it by at most
// 1 ns plus one part in 2^31.
package rate

import (
	"math/bits"
)

// NanosPerSecond is the number of nanoseconds in a second.
const NanosPerSecond = 1_000_000_000

// Rate is a byte rate with its precomputed reciprocal. The zero Rate is
// unlimited: TimeNS is 0 for every length. Rate is a value; copy it freely.
type Rate struct {
	bytesPerSec uint64

	// Linux's psched_ratecfg: mult and shift with mult < 2^32.
	mult  uint32
	shift uint8

	// mult64 is ceil(1e9 * 2^(shift+32) / rate): Linux's mult followed by
	// 32 more bits of the same quotient, rounded up so that TimeNS is the
	// exact floor of len*1e9/rate (a floored multiplier gives k-1 whenever
	// the exact time is a whole k nanoseconds).
	mult64 uint64

	// overhead is added to every packet's length, then the length is raised
	// to at least mpu, as in tc's "overhead" and "mpu".
	overhead int32
	mpu      uint32
	// atm frames every packet in ATM cells (tc's "linklayer atm").
	atm bool
}

// ATM cells: 48 bytes of payload in each 53-byte cell (Linux's
// ATM_CELL_PAYLOAD and ATM_CELL_SIZE).
const (
	ATMCellPayload = 48
	ATMCellSize    = 53
)

// New returns the Rate of bytesPerSec bytes per second, with its reciprocal
// precomputed as Linux's psched_ratecfg_precompute__ does. New(0) is the
// unlimited zero Rate.
func New(bytesPerSec uint64) Rate {
	r := Rate{bytesPerSec: bytesPerSec}
	if bytesPerSec == 0 {
		return r
	}
	r.mult, r.shift = linuxPrecompute(bytesPerSec)
	// The numerator 1e9 * 2^(shift+32) as a 128-bit number hi:lo. Its
	// quotient by the rate is below (mult+1)*2^32 <= 2^64, so Div64 does
	// not overflow.
	s := uint(r.shift) + 32
	var hi, lo uint64
	if s >= 64 {
		hi = NanosPerSecond << (s - 64)
	} else {
		hi = NanosPerSecond >> (64 - s)
		lo = NanosPerSecond << s
	}
	q, rem := bits.Div64(hi, lo, bytesPerSec)
	if rem != 0 && q != ^uint64(0) {
		q++
	}
	r.mult64 = q
	return r
}

// linuxPrecompute is psched_ratecfg_precompute__: the largest shift for
// which the multiplier still fits 31 bits, or for which 1e9<<shift still
// fits 64 bits.
func linuxPrecompute(rate uint64) (uint32, uint8) {
	factor := uint64(NanosPerSecond)
	var shift uint8
	for {
		mult := factor / rate
		if mult&(1<<31) != 0 || factor&(1<<63) != 0 {
			return uint32(mult), shift
		}
		factor <<= 1
		shift++
	}
}

// WithOverhead returns r with overhead bytes added to every packet's length
// before its time is computed (tc's "overhead"; may be negative).
func (r Rate) WithOverhead(overhead int32) Rate {
	r.overhead = overhead
	return r
}

// WithMPU returns r with every packet counted as at least mpu bytes (tc's
// "mpu", minimum packet unit).
func (r Rate) WithMPU(mpu uint32) Rate {
	r.mpu = mpu
	return r
}

// WithATM returns r with every packet charged as the ATM cells that carry
// it, as tc's "linklayer atm" (and "adsl") does: its length, after
// overhead and mpu, rounded up to whole 48-byte payloads of 53 bytes each
// (psched_l2t_ns with TC_LINKLAYER_ATM).
func (r Rate) WithATM(atm bool) Rate {
	r.atm = atm
	return r
}

// ATM reports whether r charges packets in ATM cells.
func (r Rate) ATM() bool { return r.atm }

// BytesPerSecond returns the rate in bytes per second.
func (r Rate) BytesPerSecond() uint64 { return r.bytesPerSec }

// Mult returns Linux's 32-bit multiplier for this rate.
func (r Rate) Mult() uint32 { return r.mult }

// Shift returns Linux's shift for this rate.
func (r Rate) Shift() uint8 { return r.shift }

// Overhead returns the per-packet overhead in bytes.
func (r Rate) Overhead() int32 { return r.overhead }

// MPU returns the minimum packet unit in bytes.
func (r Rate) MPU() uint32 { return r.mpu }

// Len returns the length that TimeNS charges for a packet of length bytes:
// length plus the overhead, at least the MPU, never below 0; with ATM, the
// bytes of the cells that carry that many.
func (r Rate) Len(length uint32) uint64 {
	l := int64(length) + int64(r.overhead)
	if l < int64(r.mpu) {
		l = int64(r.mpu)
	}
	if l < 0 {
		l = 0
	}
	if r.atm {
		l = (l + ATMCellPayload - 1) / ATMCellPayload * ATMCellSize
	}
	return uint64(l)
}

// TimeNS returns the nanoseconds needed to send a packet of length bytes at
// this rate: floor(Len(length) * 1e9 / rate), computed with a multiply and
// a shift.
func (r Rate) TimeNS(length uint32) uint64 {
	l := r.Len(length)
	hi, lo := bits.Mul64(l, r.mult64)
	s := uint(r.shift) + 32
	if s >= 64 {
		return hi >> (s - 64)
	}
	return hi<<(64-s) | lo>>s
}

// LinuxTimeNS returns what Linux's psched_l2t_ns gives for the same length:
// ((len + overhead, at least mpu) * mult) >> shift, with the 32-bit
// multiplier. It is here to compare with the kernel; TimeNS is what the
// qdiscs use.
func (r Rate) LinuxTimeNS(length uint32) uint64 {
	if r.bytesPerSec == 0 {
		return 0
	}
	return (r.Len(length) * uint64(r.mult)) >> r.shift
}

// BytesIn returns how many bytes the rate sends in ns nanoseconds, rounded
// down, saturating at the largest uint64. It divides, so it is for
// configuration, not for the packet path.
func (r Rate) BytesIn(ns uint64) uint64 {
	hi, lo := bits.Mul64(r.bytesPerSec, ns)
	if hi >= NanosPerSecond {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, NanosPerSecond)
	return q
}
