package tbf

import (
	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// bucket is the token state of tbf_dequeue, in nanoseconds of credit. It is
// the lane's dispatch.Gate; the lane's lock guards it.
type bucket struct {
	rate    rate.Rate
	peak    rate.Rate
	hasPeak bool
	buffer  int64 // rate.TimeNS(Burst)
	mtu     int64 // peak.TimeNS(MTU)

	tc      int64 // time of the last departure (t_c)
	tokens  int64 // rate credit at tc
	ptokens int64 // peak credit at tc
}

func (b *bucket) init(cfg Config, clock tcpip.Clock) {
	b.rate = rate.New(cfg.Rate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU)
	b.buffer = int64(b.rate.TimeNS(cfg.Burst))
	b.tokens = b.buffer
	if cfg.PeakRate != 0 {
		b.hasPeak = true
		b.peak = rate.New(cfg.PeakRate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU)
		b.mtu = int64(b.peak.TimeNS(cfg.MTU))
		b.ptokens = b.mtu
	}
	b.tc = int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
}

// Admit implements dispatch.Gate.Admit with Linux's tbf_dequeue.
func (b *bucket) Admit(now int64, size uint32) int64 {
	toks := min(now-b.tc, b.buffer)
	var ptoks int64
	if b.hasPeak {
		ptoks = min(toks+b.ptokens, b.mtu) - int64(b.peak.TimeNS(size))
	}
	toks = min(toks+b.tokens, b.buffer) - int64(b.rate.TimeNS(size))
	if toks|ptoks >= 0 {
		b.tc, b.tokens, b.ptokens = now, toks, ptoks
		return 0
	}
	return max(-toks, -ptoks)
}
