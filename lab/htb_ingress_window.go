package lab

// This file holds an htb ingress run's measurement window, shared by the
// netstack's and the sandbox's runs: the senders' downloads, what each
// had delivered, and the classes' counters and queues.

import (
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// deliveredFrom counts what the sender at addr has had delivered to the
// netstack so far, as PeerDeliveredBytes counts it, in the sender's own
// namespace, and what it has sent again.
func (l *Lab) deliveredFrom(addr string) (wire, retrans uint64, err error) {
	ns, err := l.senderNS(addr)
	if err != nil {
		return 0, 0, err
	}
	out, err := Run(ns, "ss", "-tinH", "src", addr, "dst", NetstackAddr)
	if err != nil {
		return 0, 0, err
	}
	acked, delivered, err := parseDelivered(out)
	if err != nil {
		return 0, 0, err
	}
	if retrans, err = sumField(out, "bytes_retrans"); err != nil {
		return 0, 0, err
	}
	return acked + delivered*gsoSegmentHeaders, retrans, nil
}

// startDownloads starts each load's iperf client in its sender's
// namespace, to the netstack's port, for o's warm-up and window; out
// collects what they say.
func (l *Lab) startDownloads(loads []IngressLoad, port int, o measure.Options, out *strings.Builder) (stop func(), err error) {
	var clis []func()
	stop = func() {
		for _, c := range clis {
			c()
		}
	}
	for _, ld := range loads {
		ns, _ := l.senderNS(ld.From) // checked
		o := o
		o.Streams = ld.Streams
		cli, err := l.Start(ns, out, iperfArgsPort(NetstackAddr, port, o)...)
		if err != nil {
			stop()
			return nil, err
		}
		clis = append(clis, func() { cli.Process.Kill() })
	}
	return stop, nil
}

// ingressWindow waits o.Warmup, then reads the class counters, each
// load's delivered bytes and the receiver's (rx) over o.Window. Each count
// is timed by its own reads (the middle of each), as each takes its own
// time: `runsc qdisc show` tens of ms, more when the machine is busy.
//
// With backlog (not nil), it also looks at the classes' queues every
// 10 ms over the window (backlog returns each class's queued packets).
func (l *Lab) ingressWindow(loads []IngressLoad, counters func() (map[uint32]uint64, error), rx func() (uint64, error), backlog func() map[uint32]uint64, o measure.Options, r *IngressHTBResult) error {
	time.Sleep(o.Warmup)
	type reading struct {
		classes          map[uint32]uint64
		classesAt        time.Time
		delivered, again []uint64
		deliveredAt      []time.Time
		rx               uint64
		rxAt             time.Time
	}
	timed := func(f func() error) (time.Time, error) {
		t0 := time.Now()
		err := f()
		return t0.Add(time.Since(t0) / 2), err
	}
	read := func() (reading, error) {
		var g reading
		var err error
		if g.classesAt, err = timed(func() (err error) { g.classes, err = counters(); return err }); err != nil {
			return g, err
		}
		g.delivered, g.again, g.deliveredAt = make([]uint64, len(loads)), make([]uint64, len(loads)), make([]time.Time, len(loads))
		for i, ld := range loads {
			if g.deliveredAt[i], err = timed(func() (err error) { g.delivered[i], g.again[i], err = l.deliveredFrom(ld.From); return err }); err != nil {
				return g, err
			}
		}
		if rx != nil {
			if g.rxAt, err = timed(func() (err error) { g.rx, err = rx(); return err }); err != nil {
				return g, err
			}
		}
		return g, nil
	}
	g0, err := read()
	if err != nil {
		return err
	}
	samples, empty := 0, map[uint32]int{}
	if backlog == nil {
		time.Sleep(o.Window)
	} else {
		for end := time.Now().Add(o.Window); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			samples++
			for id, n := range backlog() {
				if n == 0 {
					empty[id]++
				}
			}
		}
	}
	g1, err := read()
	if err != nil {
		return err
	}
	r.Elapsed = g1.classesAt.Sub(g0.classesAt)
	r.Loads = make([]IngressClassResult, len(loads))
	var delivered float64
	for i, ld := range loads {
		c := &r.Loads[i]
		c.Class, c.From = ld.Class, ld.From
		c.Bytes = g1.classes[ld.Class] - g0.classes[ld.Class]
		c.Bps = float64(c.Bytes) / r.Elapsed.Seconds()
		c.WireBytes = g1.delivered[i] - g0.delivered[i]
		c.WireBps = float64(c.WireBytes) / g1.deliveredAt[i].Sub(g0.deliveredAt[i]).Seconds()
		c.RetransBytes = g1.again[i] - g0.again[i]
		c.Samples, c.Empty = samples, empty[ld.Class]
		delivered += c.WireBps
	}
	r.RxBps = delivered
	if rx != nil {
		r.RxBps = float64(g1.rx-g0.rx) / g1.rxAt.Sub(g0.rxAt).Seconds()
	}
	return nil
}
