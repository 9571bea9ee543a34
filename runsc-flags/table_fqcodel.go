package runscflags

import (
	"fmt"
	"math"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// FlagFQCoDelCEThreshold is fq_codel's ce_threshold.
const FlagFQCoDelCEThreshold = "qdisc-fq-codel-ce-threshold"

// fqCoDelRows are fq_codel's flags in the table (Flags), tc-fq_codel(8)'s
// knobs. A running fq_codel changes them in place, all but flows, as
// fq_codel_change does (fqCoDelLive).
var fqCoDelRows = []Flag{
	{
		Name: FlagFQCoDelLimit, Kind: KindCount, Unit: "packets", field: func(c *Config) any { return &c.FQLimit },
		Default: "0", Unset: fmt.Sprintf("Linux's %d", fqcodel.DefaultLimit),
		Usage:      fmt.Sprintf("fq_codel: most packets queued (default %d).", fqcodel.DefaultLimit),
		Annotation: lowerDefault(uint64(fqcodel.DefaultLimit)),
		Linux:      Linux{Qdisc: "fq_codel", Param: "limit", Max: math.MaxUint32, Bound: "TCA_FQ_CODEL_LIMIT is a u32"},
	},
	{
		Name: FlagFQCoDelFlows, Kind: KindCount, Unit: "flows", field: func(c *Config) any { return &c.FQFlows },
		Default: "0", Unset: fmt.Sprintf("Linux's %d", fqcodel.DefaultFlows),
		Usage:      fmt.Sprintf("fq_codel: flow queues (default %d, at most %d).", fqcodel.DefaultFlows, fqcodel.MaxFlows),
		Annotation: operatorOnly,
		Linux:      Linux{Qdisc: "fq_codel", Param: "flows", Max: fqcodel.MaxFlows, Bound: "fq_codel_change's bound", Checked: true},
	},
	{
		Name: FlagFQCoDelQuantum, Kind: KindSize, field: func(c *Config) any { return &c.FQQuantum },
		Default: "0", Unset: "the NIC's MTU plus header",
		Usage:      "fq_codel: bytes a flow sends per round; " + sizeHelp + " (default the NIC's MTU plus header).",
		Annotation: operatorOnly,
		Linux:      Linux{Qdisc: "fq_codel", Param: "quantum", Max: fqcodel.MaxQuantum, Bound: "1 MiB, Linux's FQ_CODEL_QUANTUM_MAX", Checked: true},
	},
	{
		Name: FlagFQCoDelMemLimit, Kind: KindSize, field: func(c *Config) any { return &c.FQMemoryLimit },
		Default: "0", Unset: "Linux's 32mb",
		Usage:      "fq_codel: most memory the queued packets take; " + sizeHelp + " (default 32mb).",
		Annotation: lowerDefault(uint64(fqcodel.DefaultMemoryLimit)),
		Linux:      Linux{Qdisc: "fq_codel", Param: "memory_limit", Max: fqcodel.MaxMemoryLimit, Bound: "2 GiB, where Linux's fq_codel_change clamps it"},
	},
	{
		Name: FlagFQCoDelDropBatch, Kind: KindCount, Unit: "packets", field: func(c *Config) any { return &c.FQDropBatch },
		Default: "0", Unset: fmt.Sprintf("Linux's %d", fqcodel.DefaultDropBatch),
		Usage:      fmt.Sprintf("fq_codel: most packets dropped at once from the fattest flow at the limit (default %d).", fqcodel.DefaultDropBatch),
		Annotation: operatorOnly,
		Linux:      Linux{Qdisc: "fq_codel", Param: "drop_batch", Max: math.MaxUint32, Bound: "TCA_FQ_CODEL_DROP_BATCH_SIZE is a u32"},
	},
	{
		Name: FlagFQCoDelTarget, Kind: KindDuration, field: func(c *Config) any { return &c.FQTarget },
		Default: "0s", Unset: "Linux's " + fqcodel.DefaultTarget.String(), Example: "5ms",
		Usage:      fmt.Sprintf("fq_codel: acceptable standing queue delay, e.g. 5ms (default %v).", fqcodel.DefaultTarget),
		Annotation: lowerDefault(fqcodel.DefaultTarget),
		Linux:      Linux{Qdisc: "fq_codel", Param: "target", Max: uint64(fqcodel.MaxInterval), Bound: "CoDel's 32-bit clock of 1024 ns units, compared signed", Checked: true},
	},
	{
		Name: FlagFQCoDelInterval, Kind: KindDuration, field: func(c *Config) any { return &c.FQInterval },
		Default: "0s", Unset: "Linux's " + fqcodel.DefaultInterval.String(), Example: "100ms",
		Usage:      fmt.Sprintf("fq_codel: how long the delay may stay above target before CoDel drops, about a worst-case RTT, e.g. 100ms (default %v).", fqcodel.DefaultInterval),
		Annotation: lowerDefault(fqcodel.DefaultInterval),
		Linux:      Linux{Qdisc: "fq_codel", Param: "interval", Max: uint64(fqcodel.MaxInterval), Bound: "CoDel's 32-bit clock of 1024 ns units, compared signed", Checked: true},
	},
	{
		Name: FlagFQCoDelECN, Kind: KindBool, field: func(c *Config) any { return &c.FQNoECN }, negated: true,
		Default:    "true",
		Usage:      "fq_codel: mark ECN-capable packets CE instead of dropping them (tc's ecn; false is noecn).",
		Annotation: operatorOnly,
		Linux:      Linux{Qdisc: "fq_codel", Param: "ecn"},
	},
	{
		Name: FlagFQCoDelCEThreshold, Kind: KindDuration, field: func(c *Config) any { return &c.FQCEThreshold },
		Default: "0s", Unset: "none", Example: "1ms",
		Usage:      "fq_codel: mark ECN-capable packets CE once they waited longer than this, whatever CoDel decides, e.g. 1ms (tc's ce_threshold; default none).",
		Annotation: operatorOnly,
		Linux:      Linux{Qdisc: "fq_codel", Param: "ce_threshold", Max: uint64(fqcodel.MaxInterval), Bound: "CoDel's 32-bit clock of 1024 ns units, compared signed", Checked: true},
	},
}

// fqCoDelLive reports whether f is one of fq_codel's knobs that `runsc
// qdisc change` changes in place: every one but flows, which Linux's
// fq_codel_change refuses once the flow table exists.
func (f *Flag) fqCoDelLive() bool { return f.Linux.Qdisc == "fq_codel" && f.Name != FlagFQCoDelFlows }
