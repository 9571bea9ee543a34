package lab

// This file holds the htb run of the netstack in process: its qdisc built
// with leaves, the streams it sends, and the run.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// WithLeaves is the htb cfg with a leaf qdisc from leaf on each of its
// leaf classes (htb.ClassConfig.Leaf, which runsc's flags cannot set yet):
// a MakeQDisc. leaf gets the link's MTU with its header, as fq_codel's
// NewQueue takes it.
func WithLeaves(cfg htb.Config, leaf func(mtu uint32) (qdisc.Queue, error)) MakeQDisc {
	return func(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
		c := cfg
		c.Classes = append([]htb.ClassConfig(nil), cfg.Classes...)
		inner := map[uint32]bool{}
		for _, cl := range c.Classes {
			inner[cl.Parent] = true
		}
		for i := range c.Classes {
			if inner[c.Classes[i].ID] {
				continue
			}
			q, err := leaf(lower.MTU() + uint32(lower.MaxHeaderLength()))
			if err != nil {
				return nil, err
			}
			c.Classes[i].Leaf = q
		}
		return htb.New(lower, clock, c)
	}
}

// MeasureNetstackHTB runs the netstack with the htb qdisc mk builds,
// sends each load's streams to its destination, and reads each class's
// counter (htb's Classes) over o.Window after o.Warmup, the peer's
// goodput per class, and, with o.PingInterval, pings from each class's
// peer address.
func (l *Lab) MeasureNetstackHTB(mk MakeQDisc, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	return l.measureNetstackLoads(mk, loads, o, func(q stack.QueueingDiscipline) (func() (map[uint32]uint64, error), func() string, error) {
		d, ok := q.(*htb.Discipline)
		if !ok {
			return nil, nil, fmt.Errorf("the qdisc is %T, not htb", q)
		}
		counters := func() (map[uint32]uint64, error) {
			m := map[uint32]uint64{}
			for _, c := range d.Classes() {
				m[c.ID] = c.Bytes
			}
			return m, nil
		}
		return counters, d.TCStats, nil
	})
}

// classReader returns, for the qdisc under measurement, its per-class byte
// counters and its tc -s statistics.
type classReader func(q stack.QueueingDiscipline) (counters func() (map[uint32]uint64, error), tc func() string, err error)

// measureNetstackLoads is MeasureNetstackHTB for any qdisc whose classes
// (if any) classes reads.
func (l *Lab) measureNetstackLoads(mk MakeQDisc, loads []ClassLoad, o measure.Options, classes classReader) (HTBResult, error) {
	var r HTBResult
	if err := checkLoads(loads); err != nil {
		return r, err
	}
	n, closeAll, err := l.startSinkAndNetstack(mk, nil)
	if err != nil {
		return r, err
	}
	defer closeAll()
	counters, tc, err := classes(n.QDisc)
	if err != nil {
		return r, err
	}
	if err := l.AddClusterPeer(n); err != nil {
		return r, err
	}
	peers := make([]string, len(loads))
	for i, ld := range loads {
		peers[i] = ld.Dst
	}
	idle, err := idleRTTs(l.NSP, peers, NetstackAddr)
	if err != nil {
		return r, err
	}
	stop, err := startStreams(n, loads)
	if err != nil {
		return r, err
	}
	defer stop()
	err = l.htbWindow(loads, peers, NetstackAddr, counters, wireBytes(l.NSP, l.VethP1), o, &r)
	for i := range r.Classes {
		r.Classes[i].IdleRTT = idle[i]
	}
	r.TC = tc()
	return r, err
}

// startStreams dials each load's streams from the netstack to the peer's
// sink and sends until stop.
func startStreams(n *Netstack, loads []ClassLoad) (stop func(), err error) {
	var done atomic.Bool
	var wg sync.WaitGroup
	var conns []interface{ SetWriteDeadline(time.Time) error }
	stop = func() {
		done.Store(true)
		for _, c := range conns {
			c.SetWriteDeadline(time.Now())
		}
		wg.Wait()
	}
	for _, ld := range loads {
		for i := 0; i < ld.Streams; i++ {
			conn, err := n.Dial(ld.Dst, sinkPort)
			if err != nil {
				stop()
				return nil, fmt.Errorf("stream %d to %s: %v", i, ld.Dst, err)
			}
			conns = append(conns, conn)
			s := NewSender(uint64(len(conns)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.Run(conn, 0, &done)
			}()
		}
	}
	return stop, nil
}
