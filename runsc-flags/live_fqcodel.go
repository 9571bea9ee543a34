package runscflags

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// planFQCoDel checks a change of fq_codel's knobs (the --qdisc-fq-codel-*
// flags but flows) on the fq_codel grafted under the sandbox's qdisc (a
// tbf's child, --qdisc-tbf-child=fq_codel), which changes in place as
// Linux's fq_codel_change changes it (fqcodel.ChangeChild). nil, nil when
// the knobs do not change, or when they are the options of the kind the
// NIC runs (--qdisc=fq_codel), which planOptions changes by its Kind.
func (n *NIC) planFQCoDel(cur, next *Config) (func() error, error) {
	cfg := next.FQCoDelConfig()
	if cur.FQCoDelConfig() == cfg {
		return nil, nil
	}
	if f := byName[kindFlagName(EgressCeiling, next.runs(EgressCeiling))]; f != nil && f.alias == fqCoDelAlias {
		return nil, nil
	}
	if p, ok := n.qdisc.(fqcodel.Parent); ok {
		if ok, err := fqcodel.ChangeChild(p, cfg, 0, true); ok {
			if err != nil {
				return nil, flagError(err, EgressCeiling)
			}
			return func() error {
				now := int64(n.clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
				_, err := fqcodel.ChangeChild(p, cfg, now, false)
				return err
			}, nil
		}
	}
	return nil, fmt.Errorf("--qdisc-fq-codel-*: the sandbox has no fq_codel to change (--%s=%v, --%s=%v); its knobs change an fq_codel started with --%s=fq_codel or --%s=fq_codel", FlagQDisc, cur.QDisc, FlagTBFChild, cur.childName(), FlagQDisc, FlagTBFChild)
}

// fqCoDelArgs are the change arguments that set c's fq_codel knobs (all
// but flows) on a NIC built from the same flags, for a checkpoint: none
// where c runs no fq_codel on the send path, alone or grafted.
func (c *Config) fqCoDelArgs() []string {
	if !c.grafts(fqCoDelAlias.kind) {
		return nil
	}
	var args []string
	for i := range Flags {
		if f := &Flags[i]; f.fqCoDelLive() {
			args = append(args, "--"+f.Name+"="+f.get(c))
		}
	}
	return args
}
