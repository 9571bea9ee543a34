package benchmarks

import (
	"fmt"
	"runtime"

	"gvisor.dev/gvisor/pkg/tcpip"
	upstreamfifo "gvisor.dev/gvisor/pkg/tcpip/link/qdisc/fifo"
	upstreamtbf "gvisor.dev/gvisor/pkg/tcpip/link/qdisc/tbf"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

// Candidate is one qdisc under test.
type Candidate struct {
	// QDisc is none, fifo or tbf; Impl is netqdisc or upstream.
	QDisc, Impl string
	// Variant, if set, tells this candidate from another of the same
	// qdisc and impl ("1 queue").
	Variant string
	// Rate is the configured rate in bytes/s (0 for none and fifo).
	Rate uint64
	// Make builds the qdisc for the sender's NIC (nil: no qdisc).
	Make func(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error)
}

// Name is "netqdisc tbf", "upstream fifo", "none".
func (c Candidate) Name() string {
	if c.QDisc == "none" {
		return "none"
	}
	if c.Variant != "" {
		return c.Impl + " " + c.QDisc + " (" + c.Variant + ")"
	}
	return c.Impl + " " + c.QDisc
}

// SingleQueue is netqdisc's tbf as cfg describes it but with one queue,
// one dispatcher: the design before queues shared a bucket.
func SingleQueue(cfg *runscflags.Config) Candidate {
	c := FromConfig(cfg)
	c.Variant = "1 queue"
	c.Make = func(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
		tc := cfg.TBFConfig()
		tc.Lanes = 1
		return tbf.New(lower, clock, tc)
	}
	return c
}

// statser is a qdisc with tc -s statistics (netqdisc's).
type statser interface{ Stats() qdisc.Stats }

// FromConfig is netqdisc's qdisc as the runsc flags describe it.
func FromConfig(cfg *runscflags.Config) Candidate {
	c := Candidate{QDisc: cfg.QDisc.String(), Impl: "netqdisc", Make: cfg.NewQueueingDiscipline}
	switch cfg.QDisc {
	case "tbf":
		c.Rate = cfg.TBFRate
	case "cake":
		if cc, err := cfg.CakeConfig(); err == nil {
			c.Rate = cc.Bandwidth
		}
	}
	return c
}

// Cake is netqdisc's cake at bandwidth r (bytes/s) with tc-cake's words
// besides (the variant's name; "" for cake's defaults).
func Cake(r uint64, words string) Candidate {
	c := FromConfig(&runscflags.Config{QDisc: "cake", Cake: words, CakeBandwidth: fmt.Sprint(r)})
	c.Variant = words
	return c
}

// Upstream is gVisor's own qdisc on the same settings: its fifo with
// GOMAXPROCS queues of 1000 packets, or its tbf with rate and burst and a
// queue of as many full-size (1514-byte) packets as the limit or latency
// allows, 1000 when neither is set. (Upstream counts its queue in packets
// and has no peak rate; a peak rate is ignored.)
func Upstream(cfg *runscflags.Config) Candidate {
	c := Candidate{QDisc: cfg.QDisc.String(), Impl: "upstream"}
	switch cfg.QDisc {
	case runscflags.QDiscNone:
		c.Make = func(stack.LinkEndpoint, tcpip.Clock) (stack.QueueingDiscipline, error) { return nil, nil }
	case "fifo":
		c.Make = func(lower stack.LinkEndpoint, _ tcpip.Clock) (stack.QueueingDiscipline, error) {
			return upstreamfifo.New(lower, runtime.GOMAXPROCS(0), runscflags.FIFOQueueLen), nil
		}
	case "tbf":
		c.Rate = cfg.TBFRate
		r, burst := cfg.TBFRate, cfg.TBFBurst
		queue := uint64(runscflags.FIFOQueueLen)
		switch {
		case cfg.TBFLimit != 0:
			queue = max(1, cfg.TBFLimit/1514)
		case cfg.TBFLatency != 0:
			queue = max(1, (rate.New(r).BytesIn(uint64(cfg.TBFLatency))+burst)/1514)
		}
		c.Make = func(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
			return upstreamtbf.New(lower, clock, r, uint32(burst), uint32(queue))
		}
	default:
		panic(fmt.Sprintf("unknown qdisc %v", cfg.QDisc))
	}
	return c
}

// SideBySide returns none, netqdisc fifo and tbf, and upstream fifo and tbf,
// the tbfs with rate and burst.
func SideBySide(rate, burst uint64) []Candidate {
	tbfCfg := &runscflags.Config{QDisc: "tbf", TBFRate: rate, TBFBurst: burst}
	fifoCfg := &runscflags.Config{QDisc: "fifo"}
	none := &runscflags.Config{QDisc: runscflags.QDiscNone}
	return []Candidate{FromConfig(none), FromConfig(fifoCfg), Upstream(fifoCfg), FromConfig(tbfCfg), Upstream(tbfCfg)}
}
