package tbf_test

import (
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// linuxTBF is a model of Linux's sch_tbf, written from tbf_enqueue and
// tbf_dequeue: a bfifo bounded at limit bytes, drained by tbf_dequeue,
// which is called after every enqueue and whenever the watchdog (an ideal
// hrtimer) fires.
type linuxTBF struct {
	rate, peak  rate.Rate
	hasPeak     bool
	buffer, mtu int64
	maxSize     uint32
	limit       uint64

	tc, tokens, ptokens int64
	queue               []modelPkt
	backlog             uint64
	watchdog            int64 // -1: not armed

	sent  []modelPkt
	drops int
}

type modelPkt struct {
	seq  uint64
	size uint32
	at   int64 // departure time, once sent
}

func newLinuxTBF(cfg tbf.Config, limit uint32, start int64) *linuxTBF {
	m := &linuxTBF{
		rate:     rate.New(cfg.Rate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU),
		maxSize:  cfg.Burst,
		limit:    uint64(limit),
		tc:       start,
		watchdog: -1,
	}
	m.buffer = int64(m.rate.TimeNS(cfg.Burst))
	m.tokens = m.buffer
	if cfg.PeakRate != 0 {
		m.hasPeak = true
		m.peak = rate.New(cfg.PeakRate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU)
		m.mtu = int64(m.peak.TimeNS(cfg.MTU))
		m.ptokens = m.mtu
		m.maxSize = min(cfg.Burst, cfg.MTU)
	}
	return m
}

// enqueue is tbf_enqueue (packets over max_size dropped, as tbf does for
// non-GSO packets) followed by the dequeue run the kernel does after it.
func (m *linuxTBF) enqueue(now int64, seq uint64, size uint32) bool {
	if size > m.maxSize || m.backlog+uint64(size) > m.limit {
		m.drops++
		m.dequeue(now)
		return false
	}
	m.queue = append(m.queue, modelPkt{seq: seq, size: size})
	m.backlog += uint64(size)
	m.dequeue(now)
	return true
}

// dequeue calls tbf_dequeue until it returns nothing.
func (m *linuxTBF) dequeue(now int64) {
	m.watchdog = -1
	for len(m.queue) > 0 {
		p := m.queue[0]
		toks := min(now-m.tc, m.buffer)
		var ptoks int64
		if m.hasPeak {
			ptoks = toks + m.ptokens
			if ptoks > m.mtu {
				ptoks = m.mtu
			}
			ptoks -= int64(m.peak.TimeNS(p.size))
		}
		toks += m.tokens
		if toks > m.buffer {
			toks = m.buffer
		}
		toks -= int64(m.rate.TimeNS(p.size))
		if (toks | ptoks) >= 0 {
			m.tc, m.tokens, m.ptokens = now, toks, ptoks
			m.queue = m.queue[1:]
			m.backlog -= uint64(p.size)
			p.at = now
			m.sent = append(m.sent, p)
			continue
		}
		m.watchdog = now + max(-toks, -ptoks)
		return
	}
}
