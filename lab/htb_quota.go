package lab

// This file holds the run that measures where a class's quota falls.

import (
	"fmt"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// QuotaCutover is where a class's quota fell, as its counters said.
type QuotaCutover struct {
	// Budget is the quota's bytes; Used the class's QuotaUsed and Bytes
	// its Sent counter at the first poll that saw the quota spent, After
	// how long after the streams started that was; Unspent its QuotaUsed
	// at the poll before, Gap the time between the two polls. The quota
	// fell between Unspent and Used.
	Budget, Used, Bytes, Unspent uint64
	After, Gap                   time.Duration
	// Before is the class's rate over the second before the cut-over,
	// Fallen its rate over o.Window after it (from o.Warmup on), in
	// bytes per second.
	Before, Fallen float64
}

// MeasureQuotaCutover runs the netstack with the htb qdisc mk builds and
// load's streams into load.Class, which has a quota; it polls the class's
// counters every poll until the quota is spent (at most timeout), then
// measures the rate it fell to over o.Window after o.Warmup.
func (l *Lab) MeasureQuotaCutover(mk MakeQDisc, load ClassLoad, o measure.Options, poll, timeout time.Duration) (QuotaCutover, error) {
	var q QuotaCutover
	if err := checkLoads([]ClassLoad{load}); err != nil {
		return q, err
	}
	srv, err := l.Start(l.NSP, nil, "socat", "-u", fmt.Sprintf("TCP-LISTEN:%d,reuseaddr,fork", sinkPort), "OPEN:/dev/null")
	if err != nil {
		return q, err
	}
	defer srv.Process.Kill()
	if err := WaitListening(l.NSP, sinkPort); err != nil {
		return q, err
	}
	n, err := l.StartNetstack(mk)
	if err != nil {
		return q, err
	}
	defer n.Close()
	d, ok := n.QDisc.(*htb.Discipline)
	if !ok {
		return q, fmt.Errorf("the qdisc is %T, not htb", n.QDisc)
	}
	if err := l.AddClusterPeer(n); err != nil {
		return q, err
	}
	class := func() (htb.ClassStats, error) {
		for _, c := range d.Classes() {
			if c.ID == load.Class {
				return c, nil
			}
		}
		return htb.ClassStats{}, fmt.Errorf("no class %s", classify.ClassID(load.Class))
	}
	c, err := class()
	if err != nil || c.Quota == nil {
		return q, fmt.Errorf("class %s has no quota (%v)", classify.ClassID(load.Class), err)
	}
	q.Budget = c.Quota.Bytes
	start := time.Now()
	stop, err := startStreams(n, []ClassLoad{load})
	if err != nil {
		return q, err
	}
	defer stop()
	// The samples of the last second give the rate before the cut-over.
	type sample struct {
		t     time.Time
		bytes uint64
	}
	var ring []sample // the last second's, oldest first
	for {
		c, err := class()
		if err != nil {
			return q, err
		}
		now := time.Now()
		for len(ring) > 1 && now.Sub(ring[1].t) >= time.Second {
			ring = ring[1:]
		}
		if c.QuotaSpent {
			q.Used, q.Bytes, q.After = c.QuotaUsed, c.Bytes, now.Sub(start)
			if len(ring) > 0 {
				q.Gap = now.Sub(ring[len(ring)-1].t)
			}
			if len(ring) > 0 && now.Sub(ring[0].t) > 0 {
				q.Before = float64(c.Bytes-ring[0].bytes) / now.Sub(ring[0].t).Seconds()
			}
			break
		}
		ring = append(ring, sample{now, c.Bytes})
		q.Unspent = c.QuotaUsed
		if now.Sub(start) > timeout {
			return q, fmt.Errorf("class %s's quota of %d bytes not spent after %v: used %d", classify.ClassID(load.Class), q.Budget, timeout, c.QuotaUsed)
		}
		time.Sleep(poll)
	}
	time.Sleep(o.Warmup)
	c0, err := class()
	if err != nil {
		return q, err
	}
	t0 := time.Now()
	time.Sleep(o.Window)
	c1, err := class()
	if err != nil {
		return q, err
	}
	q.Fallen = float64(c1.Bytes-c0.Bytes) / time.Since(t0).Seconds()
	return q, nil
}
