package lab

// This file holds an htb run's measurement window, shared by the
// netstack's, the kernel's and the sandbox's runs: class counters, the
// peer's goodput and wire bytes, and pings from each class's address.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// idleRTTs is the median RTT of a few pings to sender from each of the
// peer's addresses, the path idle.
func idleRTTs(ns string, peers []string, sender string) ([]time.Duration, error) {
	idle := make([]time.Duration, len(peers))
	for i, p := range peers {
		rtts, _, err := pingFrom(ns, p, sender, 5, 50*time.Millisecond)
		if err != nil {
			return nil, err
		}
		if len(rtts) == 0 {
			return nil, fmt.Errorf("no answer to ping -I %s %s", p, sender)
		}
		idle[i] = measure.Quantile(rtts, 0.5)
	}
	return idle, nil
}

// htbWindow waits o.Warmup, then reads counters, each load's goodput at
// the peer (at its address peers[i]) and wire, the peer's received bytes,
// over o.Window, pinging sender from each load's peer address meanwhile.
func (l *Lab) htbWindow(loads []ClassLoad, peers []string, sender string, counters func() (map[uint32]uint64, error), wire func() (uint64, error), o measure.Options, r *HTBResult) error {
	time.Sleep(o.Warmup)
	r.Classes = make([]ClassResult, len(loads))
	var wg sync.WaitGroup
	perr := make([]error, len(loads))
	if o.PingInterval > 0 {
		for i := range loads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &r.Classes[i]
				c.RTTs, c.PingsSent, perr[i] = pingFrom(l.NSP, peers[i], sender, int(o.Window/o.PingInterval), o.PingInterval)
			}()
		}
	}
	defer wg.Wait()
	// The counters are read first, at a time halfway through their
	// reading; the peer's wire and goodput after them, a few ms later, on
	// both ends of the window alike.
	read := func() (map[uint32]uint64, []uint64, uint64, time.Time, error) {
		t0 := time.Now()
		b, err := counters()
		t := t0.Add(time.Since(t0) / 2)
		if err != nil {
			return nil, nil, 0, t, err
		}
		w, err := wire()
		if err != nil {
			return nil, nil, 0, t, err
		}
		g := make([]uint64, len(loads))
		for i, p := range peers {
			if g[i], err = l.peerReceived(p); err != nil {
				return nil, nil, 0, t, err
			}
		}
		return b, g, w, t, nil
	}
	b0, g0, w0, t0, err := read()
	if err != nil {
		return err
	}
	time.Sleep(o.Window)
	b1, g1, w1, t1, err := read()
	if err != nil {
		return err
	}
	r.Elapsed = t1.Sub(t0)
	secs := r.Elapsed.Seconds()
	r.PeerBps = float64(w1-w0) / secs
	for i, ld := range loads {
		c := &r.Classes[i]
		c.Class = ld.Class
		c.Bytes = b1[ld.Class] - b0[ld.Class]
		c.Bps = float64(c.Bytes) / secs
		c.Goodput = float64(g1[i]-g0[i]) / secs
	}
	wg.Wait()
	for _, err := range perr {
		if err != nil {
			return err
		}
	}
	return nil
}

// pingFrom pings to from ns with source address from, count times,
// interval apart, and returns the answered RTTs and how many were sent.
func pingFrom(ns, from, to string, count int, interval time.Duration) ([]time.Duration, int, error) {
	out, _ := Run(ns, "ping", "-n", "-I", from, "-c", fmt.Sprint(count), "-i", fmt.Sprintf("%.3f", interval.Seconds()), "-W", "2", to)
	var rtts []time.Duration
	for _, m := range pingLine.FindAllStringSubmatch(out, -1) {
		if ms, err := strconv.ParseFloat(m[1], 64); err == nil {
			rtts = append(rtts, time.Duration(ms*float64(time.Millisecond)))
		}
	}
	m := pingSent.FindStringSubmatch(out)
	if m == nil {
		return nil, 0, fmt.Errorf("ping -I %s %s: no summary: %s", from, to, out)
	}
	sent, _ := strconv.Atoi(m[1])
	return rtts, sent, nil
}

// peerReceived sums what the peer's TCP has received so far on its open
// connections at local address addr (ss's bytes_received).
func (l *Lab) peerReceived(addr string) (uint64, error) {
	out, err := Run(l.NSP, "ss", "-tinH", "src", addr)
	if err != nil {
		return 0, err
	}
	return sumField(out, "bytes_received")
}

// sumField sums the values of ss's name:value fields called name.
func sumField(out, name string) (uint64, error) {
	var sum uint64
	for _, f := range strings.Fields(out) {
		k, v, ok := strings.Cut(f, ":")
		if !ok || k != name {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("ss: %s: %v", f, err)
		}
		sum += n
	}
	return sum, nil
}
