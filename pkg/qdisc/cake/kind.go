package cake

import (
	"fmt"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// maxTinCount is the most tins a cake has (diffserv8): its metrics' members.
const maxTinCount = 8

// tinMetrics are cake's per-tin counters, as `tc -s qdisc show` prints
// them in its tins' table, each read from a tin's TinStats.
var tinMetrics = []struct {
	qdisc.Metric
	read func(TinStats) uint64
}{
	{qdisc.Metric{Name: "sent_bytes", Member: "tin", Help: "Bytes queued in the tin (tc -s qdisc cake: pkts' bytes).", Cumulative: true}, func(t TinStats) uint64 { return t.SentBytes }},
	{qdisc.Metric{Name: "sent_packets", Member: "tin", Help: "Packets queued in the tin (tc -s qdisc cake: pkts).", Cumulative: true}, func(t TinStats) uint64 { return uint64(t.SentPackets) }},
	{qdisc.Metric{Name: "dropped_packets", Member: "tin", Help: "Packets COBALT or the memory limit dropped (tc -s qdisc cake: drops).", Cumulative: true}, func(t TinStats) uint64 { return uint64(t.Drops) }},
	{qdisc.Metric{Name: "ecn_marks", Member: "tin", Help: "Packets marked CE (tc -s qdisc cake: marks).", Cumulative: true}, func(t TinStats) uint64 { return uint64(t.ECNMarks) }},
	{qdisc.Metric{Name: "ack_drops", Member: "tin", Help: "ACKs the ACK filter dropped (tc -s qdisc cake: ack_drop).", Cumulative: true}, func(t TinStats) uint64 { return uint64(t.AckDrops) }},
	{qdisc.Metric{Name: "backlog_bytes", Member: "tin", Help: "Bytes queued in the tin now (tc -s qdisc cake: backlog)."}, func(t TinStats) uint64 { return uint64(t.BacklogBytes) }},
}

// Kind is cake as a runtime knows it (qdisc.Register): tc-cake's words
// (ParseQdisc), both paths, change in place, the operator's ceiling held
// by Tighten, a Kubernetes bandwidth by lowering cake's, and its tins'
// counters as metrics (members "0" to "7", in tc -s's order).
var Kind = qdisc.Typed[Config, *Discipline]{
	Name:    "cake",
	Usage:   "Linux's CAKE in tc-cake's words: a shaper, per-flow and per-host fairness, diffserv tins.",
	Example: "bandwidth 100mbit diffserv4",
	Parse:   ParseQdisc,
	New:     New,
	NewTo:   NewTo,
	Change:  (*Discipline).Change,
	Tighten: Config.Tighten,
	Fit: func(c Config, bandwidth uint64) (Config, error) {
		if bandwidth == 0 {
			return Config{}, fmt.Errorf("cake: a bandwidth of 0 would lift cake's shaper")
		}
		if c.Bandwidth == 0 || c.Bandwidth > bandwidth {
			c.Bandwidth = bandwidth
			c.Autorate = false
		}
		return c, nil
	},
	Metrics: func() []qdisc.Metric {
		var ms []qdisc.Metric
		for _, m := range tinMetrics {
			ms = append(ms, m.Metric)
		}
		return ms
	}(),
	Members: func(Config) []string {
		var tins []string
		for t := 0; t < maxTinCount; t++ {
			tins = append(tins, fmt.Sprint(t))
		}
		return tins
	},
	Samples: func(q *Discipline) []qdisc.Sample {
		var out []qdisc.Sample
		for t, tin := range q.XStats().Tins {
			for _, m := range tinMetrics {
				out = append(out, qdisc.Sample{Metric: m.Name, Member: fmt.Sprint(t), Value: m.read(tin)})
			}
		}
		return out
	},
}.Kind()

func init() { qdisc.Register(Kind) }

var _ qdisc.Discipline = (*Discipline)(nil)
