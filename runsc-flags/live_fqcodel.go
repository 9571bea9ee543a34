package runscflags

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// planFQCoDel checks a change of fq_codel's knobs (the --qdisc-fq-codel-*
// flags but flows): the sandbox's fq_codel, alone or as its tbf's child,
// changes in place as Linux's fq_codel_change changes it (fqcodel's
// Change). nil, nil when the knobs do not change.
func (n *NIC) planFQCoDel(cur, next *Config) (func() error, error) {
	cfg := next.FQCoDelConfig()
	if cur.FQCoDelConfig() == cfg {
		return nil, nil
	}
	switch q := n.qdisc.(type) {
	case *fqcodel.Discipline:
		if err := q.CheckChange(cfg); err != nil {
			return nil, flagError(err, fqCoDelFlags)
		}
		return func() error { return q.Change(cfg) }, nil
	case *tbf.Discipline:
		if ok, err := fqcodel.ChangeChild(q, cfg, 0, true); ok {
			if err != nil {
				return nil, flagError(err, fqCoDelFlags)
			}
			return func() error {
				now := int64(n.clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
				_, err := fqcodel.ChangeChild(q, cfg, now, false)
				return err
			}, nil
		}
	}
	return nil, fmt.Errorf("--qdisc-fq-codel-*: the sandbox has no fq_codel to change (--%s=%v, --%s=%v); its knobs change an fq_codel started with --%s=fq_codel or --%s=fq_codel", FlagQDisc, cur.QDisc, FlagTBFChild, cur.TBFChild, FlagQDisc, FlagTBFChild)
}

// fqCoDelArgs are the change arguments that set c's fq_codel knobs (all
// but flows) on a NIC built from the same flags, for a checkpoint: none
// where c has no fq_codel.
func (c *Config) fqCoDelArgs() []string {
	if c.QDisc != QDiscFQCoDel && (c.QDisc != QDiscTBF || c.TBFChild != ChildFQCoDel) {
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
