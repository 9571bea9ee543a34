package fqcodel

import (
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/codel"
)

// paramsOf is CoDel's knobs for cfg on a link whose MTU plus header is
// mtu.
func paramsOf(cfg Config, mtu uint32) codel.Params {
	return codel.Params{
		Target:        codel.DurationOf(cfg.Target),
		Interval:      codel.DurationOf(cfg.Interval),
		MTU:           mtu,
		ECN:           !cfg.NoECN,
		CEThreshold:   codel.DurationOf(cfg.CEThreshold),
		CEThresholdOn: cfg.CEThreshold != 0,
		CESelector:    cfg.CESelector,
		CEMask:        cfg.CEMask,
	}
}

// CheckChange reports whether Change would take cfg: nil, or a
// *ConfigError naming the setting to change.
func (q *Scheduler) CheckChange(cfg Config) error {
	_, err := q.changed(cfg)
	return err
}

// changed is cfg with its defaults filled in, as Change would put it in
// force.
func (q *Scheduler) changed(cfg Config) (Config, error) {
	// fq_codel_change: flows are -EINVAL once the flow table exists. Our
	// Config is whole, so the flows in force (or 0, the default they
	// came from) are no change.
	if cfg.Flows != 0 && cfg.Flows != q.cfg.Flows {
		return cfg, configErr("flows", "flows %d: a running fq_codel keeps its %d flows (Linux's fq_codel_change refuses flows once they exist); leave flows as they are, or start anew with them", cfg.Flows, q.cfg.Flows)
	}
	next, err := cfg.withDefaults(q.params.MTU)
	if err != nil {
		return cfg, err
	}
	next.Flows = q.cfg.Flows
	return next, nil
}

// Change reconfigures the running queue to cfg at now, in place, as
// fq_codel_change does: limit, quantum, target, interval, ecn,
// ce_threshold (and its selector), memory_limit and drop_batch take
// effect at once; flows cannot change (a *ConfigError, and nothing
// changes). Each flow keeps its packets, its deficit and its CoDel
// state. Then, while more packets or memory are queued than the new
// limits allow, it dequeues (CoDel deciding on the way, as Linux's
// qdisc_dequeue_internal does) and drops, counting these as
// drop_overlimit (and drop_overmemory); Linux counts them as sent. It
// returns how many packets and bytes it dropped.
func (q *Scheduler) Change(cfg Config, now int64) (dropped int, droppedBytes uint64, err error) {
	next, err := q.changed(cfg)
	if err != nil {
		return 0, 0, err
	}
	q.cfg = next
	q.params = paramsOf(next, q.params.MTU)
	for q.qlen > q.cfg.Limit || q.memory > uint64(q.cfg.MemoryLimit) {
		overMemory := q.memory > uint64(q.cfg.MemoryLimit)
		e, ok := q.dequeue(codel.TimeOf(now))
		if !ok {
			break
		}
		e.pkt.DecRef()
		dropped++
		droppedBytes += uint64(e.len)
		q.dropOverlimit++
		if overMemory {
			q.dropOvermemory++
		}
	}
	return dropped, droppedBytes, nil
}

// Change reconfigures the running fq_codel in place (Scheduler.Change):
// everything but its flows, nothing queued reordered; what is queued past
// a lowered limit is dropped.
func (d *Discipline) Change(cfg Config) error {
	l := d.Lane()
	var err error
	l.Locked(func() { _, _, err = d.child.Change(cfg, l.Now()) })
	l.Wake()
	return err
}

// CheckChange reports whether Change would take cfg.
func (d *Discipline) CheckChange(cfg Config) error {
	var err error
	d.Lane().Locked(func() { err = d.child.CheckChange(cfg) })
	return err
}

// ChangeChild changes p's child in place if it is fq_codel (as Change),
// at now on p's clock; ok is false, and nothing changes, if it is not.
func ChangeChild(p Parent, cfg Config, now int64, check bool) (ok bool, err error) {
	p.Child(func(c qdisc.Queue) {
		q, is := c.(*Queue)
		if !is {
			return
		}
		ok = true
		if check {
			err = q.CheckChange(cfg)
			return
		}
		_, _, err = q.Change(cfg, now)
	})
	return ok, err
}
