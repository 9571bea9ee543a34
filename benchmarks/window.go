package benchmarks

import (
	"fmt"
	"syscall"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// The measured window: the timeline, the progress lines, and the figures
// of a Result, the qdisc's own included.

// measure runs the warm-up and the measured time, sampling the timeline
// and calling o.Progress, and returns what it measured.
func (h *harness) measure() measure.Result {
	o, start := h.o, h.start
	res := measure.Result{Rate: h.c.Rate, Streams: o.Streams, Pace: o.Pace, IdleRTT: h.idleRTT}
	end := start.Add(o.Warmup + o.Window)
	measureFrom := start.Add(o.Warmup)
	var wireAt0, recvAt0, drops0, wakeups0, rexmit0 uint64
	streams0 := make([]uint64, len(h.streamBytes))
	var cpu0 time.Duration
	lastSec, lastBytes := start, h.wire.bytes.Load()
	prevAt, prevBytes := start, h.wire.bytes.Load()
	measuring := false
	for now := time.Now(); now.Before(end); now = time.Now() {
		time.Sleep(min(o.Sample, end.Sub(now), max(0, measureFrom.Sub(now))+boolDur(measuring, o.Sample)))
		now = time.Now()
		b := h.wire.bytes.Load()
		if !measuring && !now.Before(measureFrom) {
			measuring = true
			wireAt0, recvAt0, drops0, wakeups0, cpu0 = b, h.received.Load(), h.drops(), h.wakeups(), cpuNow()
			rexmit0 = h.retransmits()
			for i := range streams0 {
				streams0[i] = h.streamBytes[i].Load()
			}
			measureFrom = now
		}
		if dt := now.Sub(prevAt); dt > 0 {
			res.Timeline = append(res.Timeline, measure.Point{At: now.Sub(start), WireBps: float64(b-prevBytes) / dt.Seconds()})
		}
		prevAt, prevBytes = now, b
		if o.Progress != nil && now.Sub(lastSec) >= time.Second {
			r := h.rt.between(lastSec, now)
			o.Progress(measure.Progress{Elapsed: now.Sub(start), WireBps: float64(b-lastBytes) / now.Sub(lastSec).Seconds(), RTT: measure.Quantile(r, 0.5), Drops: h.drops(), Warmup: !measuring})
			lastSec, lastBytes = now, b
		}
	}
	stopAt := time.Now()
	res.Elapsed = stopAt.Sub(measureFrom)
	res.CPU = cpuNow() - cpu0
	res.Wakeups = h.wakeups() - wakeups0
	res.WireBytes = h.wire.bytes.Load() - wireAt0
	res.WireBps = float64(res.WireBytes) / res.Elapsed.Seconds()
	res.GoodputBps = float64(h.received.Load()-recvAt0) / res.Elapsed.Seconds()
	res.Drops = h.drops() - drops0
	res.Retransmits = h.retransmits() - rexmit0
	res.RTTs = h.rt.between(measureFrom, stopAt)
	res.QueueDelays = h.queue.between(measureFrom, stopAt)
	if o.Sparse {
		for i := 1; i < len(streams0); i++ {
			res.StreamBps = append(res.StreamBps, float64(h.streamBytes[i].Load()-streams0[i])/res.Elapsed.Seconds())
		}
		res.UDPRTTs = h.urt.between(measureFrom, stopAt)
		// The echoes sent in the window whose fate is known (answered, or
		// timed out: an RTT of 0).
		for _, d := range h.udpSent.between(measureFrom, stopAt) {
			res.UDPSent++
			if d == 0 {
				res.UDPLost++
			}
		}
	}
	res.ProbeRTTs = h.rt.since(start)
	if s, ok := h.q.(statser); ok {
		res.Stats, res.HasStats, res.TCStats = s.Stats(), true, s.Stats().String()
	}
	if s, ok := h.q.(interface{ TCStats() string }); ok {
		res.TCStats = s.TCStats()
	}
	switch q := h.q.(type) {
	case interface{ XStats() fqcodel.XStats }:
		res.ECNMarks = q.XStats().ECNMark
	case fqcodel.Parent:
		x, _ := fqcodel.ChildXStats(q)
		res.ECNMarks = x.ECNMark
	}
	if s, ok := h.q.(fmt.Stringer); ok {
		res.Describe = s.String()
	}
	if l, ok := h.q.(interface {
		Lateness() qdisc.HistogramSnapshot
	}); ok {
		res.Lateness, res.HasLateness = l.Lateness(), true
	}
	return res
}

// retransmits is how many TCP segments the sending stack has
// retransmitted.
func (h *harness) retransmits() uint64 { return h.sa.Stats().TCP.Retransmits.Value() }

// drops and wakeups read the qdisc's counters (upstream's qdiscs have
// none: the stack's count of refused packets, and 0).
func (h *harness) drops() uint64 {
	if s, ok := h.q.(statser); ok {
		return s.Stats().Drops
	}
	return h.sa.Stats().NICs.TxPacketsDroppedNoBufferSpace.Value()
}

func (h *harness) wakeups() uint64 {
	if w, ok := h.q.(interface{ Wakeups() uint64 }); ok {
		return w.Wakeups()
	}
	return 0
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func boolDur(b bool, d time.Duration) time.Duration {
	if b {
		return d
	}
	return 0
}
