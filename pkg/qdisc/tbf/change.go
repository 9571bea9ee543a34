package tbf

import (
	"math"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
)

// Change changes the tbf's settings in place, as `tc qdisc change ... tbf`
// does (Linux's tbf_change): what is queued stays queued, in order, and
// leaves under the new buckets; the statistics go on.
//
// Tokens follow tbf_change: it sets tokens = buffer and ptokens = mtu and
// keeps t_c, so the next dequeue finds every bucket full. Here too each
// new bucket (and the packet bucket) starts full at the change: a burst
// of the new size may leave at once. The limit is set as
// fifo_set_limit sets the child's: packets already queued past a lower
// limit stay, and new ones are dropped until the backlog is under it.
//
// A ceiling may be removed (Rate and PacketRate both 0, as Firecracker's
// 0-sized bucket: packets then leave as they come, within the limit) and
// set again. cfg is checked as New checks it, on the same link; the
// settings that shape the qdisc itself cannot change (Lanes, Slack, and
// the child, which a Change keeps: its Child is nil or the one in force):
// such a change is a *ConfigError naming the field, and nothing changes.
func (d *Discipline) Change(cfg Config) error {
	p, err := d.prepare(cfg)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.child == nil {
		d.lanes.SetLimits(int(p.cfg.Limit/minPacketBytes)+1, uint64(p.cfg.Limit))
	}
	d.maxSize.Store(d.bound(p.maxSize))
	d.lanes.SetGate(p.gate, p.maxSize)
	if d.child != nil {
		d.lanes.Lanes[0].Locked(func() { d.setChild(d.child, p.cfg) })
	}
	d.cfg = p.cfg
	return nil
}

// CheckChange reports whether Change would accept cfg, changing nothing:
// a caller that changes several qdiscs as one (all or none) checks them
// all first.
func (d *Discipline) CheckChange(cfg Config) error {
	_, err := d.prepare(cfg)
	return err
}

// change is a checked Change: the configuration to put in force, its
// buckets (nil: no ceiling) and the largest packet they pass.
type change struct {
	cfg     Config
	gate    dispatch.Gate
	maxSize uint32
}

// prepare checks cfg for Change and builds its buckets, full now.
func (d *Discipline) prepare(cfg Config) (change, error) {
	cur := d.Config()
	if cfg.Lanes == 0 {
		cfg.Lanes = 1
	}
	if curLanes := max(cur.Lanes, 1); cfg.Lanes != curLanes {
		return change{}, configErr("lanes", "lanes is %d and cannot change on a running qdisc; leave it at %d", cfg.Lanes, curLanes)
	}
	if cfg.Slack != 0 && cfg.Slack != cur.Slack && !(cfg.Slack == NoSlack && cur.Slack == 0) {
		return change{}, configErr("slack", "slack %v cannot change on a running qdisc (%v in force); leave it unset", cfg.Slack, cur.Slack)
	}
	if err := d.sameChild(cfg, cur); err != nil {
		return change{}, err
	}
	cfg.Slack, cfg.Child = cur.Slack, cur.Child
	if cfg.Rate == 0 && cfg.PacketRate == 0 {
		v, err := d.checkNoCeiling(cfg)
		return change{cfg: v}, err
	}
	v, maxSize, err := check(d.link, cfg, d.splitsGSO)
	if err != nil {
		return change{}, err
	}
	return change{cfg: v, gate: newGate(v), maxSize: maxSize}, nil
}

// checkNoCeiling checks a Config with no ceiling (see Change): only the
// queue's limit is left, which Latency cannot give without a rate.
func (d *Discipline) checkNoCeiling(cfg Config) (Config, error) {
	if cfg.Burst != 0 || cfg.PeakRate != 0 || cfg.MTU != 0 || cfg.PacketBurst != 0 || cfg.Overhead != 0 || cfg.MPU != 0 || cfg.ATM {
		return cfg, configErr("rate", "the rate and pkt_rate are 0, which removes the ceiling; leave burst, peakrate, mtu, pkt_burst, overhead, mpu and linklayer unset with it")
	}
	if cfg.Latency != 0 {
		return cfg, configErr("latency", "latency needs a rate to give a limit, and the ceiling is removed; give a limit in bytes, or none")
	}
	if cfg.Child != nil && !isByteLimiter(cfg.Child) {
		if cfg.Limit != 0 {
			return cfg, configErr("limit", "with a child qdisc (%s), the child's limits bound the queue; leave limit unset", childName(cfg.Child))
		}
		return cfg, nil
	}
	if cfg.Limit == 0 {
		cfg.Limit = uint32(min(boundsOf(d.link, d.splitsGSO).defaultLimit(cfg.Child != nil), math.MaxUint32))
	}
	return cfg, nil // any limit, as New takes (see validate)
}

// bound is what the receive path charges a GRO aggregate at most (see
// receivedSize): the buckets' largest packet, or with no ceiling the
// largest there is.
func (d *Discipline) bound(maxSize uint32) uint32 {
	if maxSize == 0 {
		return math.MaxUint32
	}
	return maxSize
}

// sameChild refuses a change of the child: a Change keeps the child in
// force, as `tc qdisc change` of a tbf leaves its child alone, so its
// Child is nil or that one.
func (d *Discipline) sameChild(cfg, cur Config) error {
	if cfg.Child != nil && cfg.Child != cur.Child {
		return configErr("child", "the tbf's child cannot change on a running qdisc; leave Child nil to keep the one in force")
	}
	return nil
}

// CheckOn reports whether New (NewTo when splitsGSO is false) would
// accept cfg on link: nil, or the *ConfigError naming the setting.
func CheckOn(link stack.LinkEndpoint, cfg Config, splitsGSO bool) error {
	_, _, err := check(link, cfg, splitsGSO)
	return err
}

// NewGate returns the buckets cfg describes (its rate, burst, peak rate,
// MTU, packet rate and burst, overhead and MPU; not its queue's settings)
// for lanes whose packets cross link, full, and the largest packet
// they pass: a ceiling to set in place on a running fifo or fq_codel
// (dispatch.Group.SetGate), which makes that queue a tbf's child, as `tc
// qdisc replace dev eth0 root tbf ...` puts a tbf over it. splitsGSO says
// the lanes cut host-GSO packets larger than the bucket (the send path).
// The gate is a fmt.Stringer that describes itself as `tc qdisc show`
// does a tbf's buckets.
func NewGate(link stack.LinkEndpoint, cfg Config, splitsGSO bool) (dispatch.Gate, uint32, error) {
	cfg.Limit, cfg.Latency, cfg.Lanes, cfg.Slack, cfg.Child = 0, 0, 0, 0, nil
	if cfg.Rate == 0 && cfg.PacketRate == 0 {
		return nil, 0, nil
	}
	v, maxSize, err := check(link, cfg, splitsGSO)
	if err != nil {
		return nil, 0, err
	}
	return newGate(v), maxSize, nil
}

// bucketsString describes c's buckets alone, as String does with no
// queue settings.
func (c Config) bucketsString() string {
	c.Limit, c.Latency, c.Child = 0, 0, nil
	return c.String()
}
