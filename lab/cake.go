package lab

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// Hosts the sandbox serves (cake, issue 29): the peer's two addresses,
// PeerAddr and PeerClusterAddr (AddClusterPeer), are two clients, two
// hosts to a qdisc that isolates hosts by destination (cake's dsthost,
// dual-dsthost and triple-isolate), one kernel TCP receiving for both.

// HostLoads are the loads of a host fairness run: streamsA bulk TCP
// streams to client A (PeerAddr, labelled 1) and streamsB to client B
// (PeerClusterAddr, labelled 2).
func HostLoads(streamsA, streamsB int) []ClassLoad {
	return []ClassLoad{
		{Class: 1, Dst: PeerAddr, Streams: streamsA},
		{Class: 2, Dst: PeerClusterAddr, Streams: streamsB},
	}
}

// MeasureNetstackHosts runs the netstack with the qdisc mk builds (any:
// cake, or tbf with fq_codel beside it), sends each load's streams to its
// client, and reads each client's goodput at the peer (its Goodput; Bytes
// is 0: no class counters) over o.Window after o.Warmup, and, with
// o.PingInterval, pings from each client's address. TC is the qdisc's tc
// -s statistics at the end, where it has them.
func (l *Lab) MeasureNetstackHosts(mk MakeQDisc, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	return l.measureNetstackLoads(mk, loads, o, func(q stack.QueueingDiscipline) (func() (map[uint32]uint64, error), func() string, error) {
		tc := func() string { return "" }
		if s, ok := q.(interface{ TCStats() string }); ok {
			tc = s.TCStats
		}
		none := func() (map[uint32]uint64, error) { return nil, nil }
		return none, tc, nil
	})
}

// CakeQDisc is a MakeQDisc of cake as words (tc-cake's: "bandwidth 100mbit
// triple-isolate") configure it.
func CakeQDisc(words string) (MakeQDisc, error) {
	cfg, err := cake.ParseQdisc(words)
	if err != nil {
		return nil, err
	}
	return func(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
		return cake.New(lower, clock, cfg)
	}, nil
}

// Shares returns each load's share of the goodput the loads got in r.
func Shares(r HTBResult) []float64 {
	var sum float64
	for _, c := range r.Classes {
		sum += c.Goodput
	}
	out := make([]float64, len(r.Classes))
	for i, c := range r.Classes {
		if sum > 0 {
			out[i] = c.Goodput / sum
		}
	}
	return out
}
