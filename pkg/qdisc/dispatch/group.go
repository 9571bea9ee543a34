package dispatch

import (
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Group is a qdisc's lanes: started together, closed together, their
// statistics summed.
type Group struct {
	Lanes []Lane
	alarm *Alarm
	wg    sync.WaitGroup
}

// Init makes n lanes (at least 1; exactly 1 with a Queue, which is one
// qdisc), each set up with cfg, sharing one Alarm.
func (g *Group) Init(n int, cfg Config) {
	if cfg.Queue != nil {
		n, cfg.Budget = 1, nil
	}
	if cfg.Clock == nil {
		cfg.Clock = tcpip.NewStdClock()
	}
	g.Lanes = make([]Lane, max(n, 1))
	lanes := make([]*Lane, len(g.Lanes))
	for i := range g.Lanes {
		lanes[i] = &g.Lanes[i]
	}
	if cfg.Budget != nil {
		cfg.Budget.share(lanes)
	}
	g.alarm = newAlarm(cfg.Clock, cfg.slack(), lanes)
	cfg.alarm = g.alarm
	for i := range g.Lanes {
		g.Lanes[i].Init(cfg)
	}
}

// Start starts every lane's dispatcher.
func (g *Group) Start() {
	for i := range g.Lanes {
		g.Lanes[i].Start(&g.wg)
	}
}

// Lane returns the lane for a packet hash.
func (g *Group) Lane(hash uint32) *Lane { return &g.Lanes[hash%uint32(len(g.Lanes))] }

// Close closes every lane and waits for their dispatchers to exit.
func (g *Group) Close() {
	for i := range g.Lanes {
		g.Lanes[i].Close()
	}
	g.wg.Wait()
}

// Stats sums the lanes' statistics.
func (g *Group) Stats() qdisc.Stats {
	var s qdisc.Stats
	for i := range g.Lanes {
		s = s.Add(g.Lanes[i].Stats())
	}
	return s
}

// Lateness sums the lanes' wake-up lateness.
func (g *Group) Lateness() qdisc.HistogramSnapshot {
	var s qdisc.HistogramSnapshot
	for i := range g.Lanes {
		s = s.Add(g.Lanes[i].Lateness())
	}
	return s
}

// Wakeups returns how many times the lanes' shared timer has fired.
func (g *Group) Wakeups() uint64 { return g.alarm.Wakeups() }

// Quiescent reports whether every lane is quiescent (see Lane.Quiescent).
func (g *Group) Quiescent() bool {
	for i := range g.Lanes {
		if !g.Lanes[i].Quiescent() {
			return false
		}
	}
	return true
}
