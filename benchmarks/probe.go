package benchmarks

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// The TCP request/response probe: its RTT idle and under load.

// rtts collects probe samples with their times.
type rtts struct {
	mu sync.Mutex
	// +checklocks:mu
	samples []sample
}

type sample struct {
	at  time.Time
	rtt time.Duration
}

func (r *rtts) add(at time.Time, d time.Duration) {
	r.mu.Lock()
	r.samples = append(r.samples, sample{at, d})
	r.mu.Unlock()
}

// since returns the samples taken from start on, in time order, timed
// from start.
func (r *rtts) since(start time.Time) []measure.RTTPoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []measure.RTTPoint
	for _, s := range r.samples {
		if !s.at.Before(start) {
			out = append(out, measure.RTTPoint{At: s.at.Sub(start), RTT: s.rtt})
		}
	}
	return out
}

// between returns the sorted RTTs sampled in [from, to).
func (r *rtts) between(from, to time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var d []time.Duration
	for _, s := range r.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			d = append(d, s.rtt)
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d
}

// ping sends one probe and waits for its echo.
func (h *harness) ping() (time.Duration, error) {
	buf := make([]byte, probeSize)
	t0 := time.Now()
	if _, err := h.probe.Write(buf); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(h.probe, buf); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// startProbe connects the probe, measures the idle RTT, then probes every
// o.PingInterval until tearDown.
func (h *harness) startProbe() error {
	probe, err := gonet.DialTCP(h.sa, tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: probePort}, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("probe: %v", err)
	}
	h.track(probe)
	h.probe = probe
	var idle []time.Duration
	for i := 0; i < 20; i++ {
		d, err := h.ping()
		if err != nil {
			return fmt.Errorf("probe: %v", err)
		}
		idle = append(idle, d)
		time.Sleep(h.o.PingInterval / 2)
	}
	h.idleRTT = measure.Quantile(idle, 0.5)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for !h.stopping.Load() {
			h.sampleQueue()
			d, err := h.ping()
			if err != nil {
				return
			}
			h.rt.add(time.Now(), d)
			time.Sleep(h.o.PingInterval)
		}
	}()
	return nil
}

// sampleQueue records the qdisc's backlog over its configured rate
// (nothing for a qdisc without Stats or a rate): the bulk flows' standing
// queue, which small queues bound. A sparse flow such as the probe skips
// most of it under a flow-queueing child.
func (h *harness) sampleQueue() {
	s, ok := h.q.(statser)
	if !ok || h.c.Rate == 0 {
		return
	}
	b := s.Stats().BacklogBytes
	h.queue.add(time.Now(), time.Duration(float64(b)/float64(h.c.Rate)*float64(time.Second)))
}
