package fqcodel

import (
	"fmt"
	"math"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/codel"
)

// Config is fq_codel's knobs, with tc's names. The zero Config is Linux's
// defaults.
type Config struct {
	// Limit is the most packets queued (tc "limit"; default 10240).
	Limit uint32
	// Flows is the number of flow queues packets are hashed to (tc
	// "flows"; default 1024, at most 65536).
	Flows uint32
	// Target is the standing queue delay CoDel accepts, Interval how long
	// it may be exceeded before CoDel drops (tc "target", "interval";
	// defaults 5 ms and 100 ms; at most MaxInterval, target no more than
	// interval).
	Target   time.Duration
	Interval time.Duration
	// Quantum is the bytes a flow may send per round (tc "quantum";
	// default the link's MTU plus header; at most MaxQuantum, and a
	// quantum given below 256 is raised to 256, as Linux does).
	Quantum uint32
	// MemoryLimit bounds the memory the queued packets take, in bytes (tc
	// "memory_limit"; default 32 MB; lowered to MaxMemoryLimit if above,
	// as Linux does).
	MemoryLimit uint32
	// DropBatch is the most packets dropped at once from the fattest flow
	// when a limit is passed (tc "drop_batch"; default 64).
	DropBatch uint32
	// NoECN drops ECN-capable packets instead of marking them CE (tc
	// "noecn"; ECN is on by default).
	NoECN bool
	// CEThreshold, if not 0, marks CE every ECN-capable packet that
	// leaves after waiting longer than it, whatever CoDel decides (tc
	// "ce_threshold"; codel_dequeue's end), counted as ce_mark; with
	// CEMask not 0 only packets whose DS field masked with CEMask is
	// CESelector (tc "ce_threshold_selector CESelector/CEMask"). Linux
	// keeps it in CoDel's 1024 ns units, so tc's ce_threshold 0 (mark
	// whatever waited at all) is any threshold under 1024 ns here, 1us
	// say. It works with ECN off too (noecn drops instead of marking
	// CoDel's own decisions only).
	CEThreshold time.Duration
	CESelector  uint8
	CEMask      uint8
}

// Linux's defaults and bounds.
const (
	DefaultLimit       = 10240
	DefaultFlows       = 1024
	DefaultTarget      = 5 * time.Millisecond
	DefaultInterval    = 100 * time.Millisecond
	DefaultMemoryLimit = 32 << 20
	DefaultDropBatch   = 64
	// MaxFlows is the most flows fq_codel_change accepts.
	MaxFlows = 65536
	// MaxQuantum is FQ_CODEL_QUANTUM_MAX (include/uapi/linux/pkt_sched.h),
	// the largest quantum fq_codel_change accepts since Linux 5.15
	// ("fq_codel: reject silly quantum parameters"). Past 2^31 a flow's
	// deficit, an int32 as in Linux, would never turn positive and the
	// dequeue loop would spin.
	MaxQuantum = 1 << 20
	// MaxMemoryLimit is where fq_codel_change clamps memory_limit.
	MaxMemoryLimit = 1 << 31
	// MaxInterval is the longest target or interval: CoDel compares its
	// 32-bit times (units of 1024 ns) by their signed difference, as
	// Linux's codel_time_after does, so a longer interval would read as a
	// time already past (about 36m39s). Linux's fq_codel_change takes up
	// to 2^32-1 µs (about 71m35s), and past this its CoDel misreads the
	// interval the same way; we refuse.
	MaxInterval = time.Duration(math.MaxInt32) << codel.Shift
	minQuantum  = 256
)

// ConfigError says which setting is wrong, by tc's name, and what to
// change, naming the bound. Field is "flows", "quantum", "target",
// "interval" or "ce_threshold" (limit, memory_limit and drop_batch have no bound that is
// refused).
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "fq_codel " + e.Field + ": " + e.Msg }

// Setting implements qdisc.SettingError: the setting is Field, of
// fq_codel.
func (e *ConfigError) Setting() (kind, name, msg string) { return "fq_codel", e.Field, e.Msg }

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// withDefaults checks c against Linux's bounds (fq_codel_change and
// fq_codel_init) and fills in its defaults; mtu is the link's MTU plus
// header (Linux's psched_mtu), the default quantum. A 0 field means
// Linux's default, so the bounds Linux puts on 0 (flows, drop_batch) are
// met by the default.
func (c Config) withDefaults(mtu uint32) (Config, error) {
	switch {
	// fq_codel_change: flows 0 or above 65536 is -EINVAL.
	case c.Flows > MaxFlows:
		return c, configErr("flows", "%d flows is more than %d, the most Linux's fq_codel takes; lower flows", c.Flows, MaxFlows)
	// fq_codel_change: quantum = max(256, quantum), and above
	// FQ_CODEL_QUANTUM_MAX it is -EINVAL.
	case c.Quantum > MaxQuantum:
		return c, configErr("quantum", "quantum %d bytes is more than %d (1 MiB, Linux's FQ_CODEL_QUANTUM_MAX); lower quantum", c.Quantum, MaxQuantum)
	// fq_codel_change takes target and interval as u32 microseconds, so
	// never negative; the upper bound is CoDel's clock (MaxInterval).
	case c.Target < 0:
		return c, configErr("target", "target %v is negative; give a positive duration such as 5ms", c.Target)
	case c.Interval < 0:
		return c, configErr("interval", "interval %v is negative; give a positive duration such as 100ms", c.Interval)
	case c.Target > MaxInterval:
		return c, configErr("target", "target %v is more than %v, the longest CoDel's 32-bit clock (1024 ns units, compared signed) can time; lower target", c.Target, MaxInterval)
	case c.CEThreshold < 0:
		return c, configErr("ce_threshold", "ce_threshold %v is negative; give a positive duration such as 1ms, or 0 for none", c.CEThreshold)
	case c.CEThreshold > MaxInterval:
		return c, configErr("ce_threshold", "ce_threshold %v is more than %v, the longest CoDel's 32-bit clock (1024 ns units, compared signed) can time; lower ce_threshold", c.CEThreshold, MaxInterval)
	case c.CEThreshold == 0 && (c.CEMask != 0 || c.CESelector != 0):
		return c, configErr("ce_threshold", "ce_threshold_selector %#x/%#x needs a ce_threshold to select packets for; set one, or leave the selector unset", c.CESelector, c.CEMask)
	case c.Interval > MaxInterval:
		return c, configErr("interval", "interval %v is more than %v, the longest CoDel's 32-bit clock (1024 ns units, compared signed) can time; lower interval", c.Interval, MaxInterval)
	}
	// fq_codel_change: limit is any u32, taken as is (0 is ours: the
	// default); the memory limit bounds the queue as well.
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	if c.Flows == 0 {
		c.Flows = DefaultFlows
	}
	if c.Target == 0 {
		c.Target = DefaultTarget
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Quantum == 0 {
		// fq_codel_init: the default quantum is psched_mtu as it is (a
		// link's MTU of 68 gives 82), not raised to 256; it is capped at
		// FQ_CODEL_QUANTUM_MAX, which no Linux device's MTU reaches, and
		// a link reporting no MTU at all gets 256.
		c.Quantum = min(mtu, MaxQuantum)
		if c.Quantum == 0 {
			c.Quantum = minQuantum
		}
	} else {
		// fq_codel_change: a quantum given below 256 is raised to 256 (a
		// clamp, not an error).
		c.Quantum = max(c.Quantum, minQuantum)
	}
	if c.MemoryLimit == 0 {
		c.MemoryLimit = DefaultMemoryLimit
	}
	// fq_codel_change: memory_limit is clamped to at most 2^31 bytes.
	c.MemoryLimit = min(c.MemoryLimit, MaxMemoryLimit)
	// fq_codel_change: drop_batch is raised to at least 1 (here 0 is the
	// default, 64); there is no upper bound, since a drop takes at most
	// half the fattest flow's backlog.
	if c.DropBatch == 0 {
		c.DropBatch = DefaultDropBatch
	}
	// Ours: Linux takes a target above the interval, which RFC 8289 sets
	// at 5-10% of it; such a target is a mistake.
	if c.Target > c.Interval {
		return c, configErr("target", "target %v is above interval %v; a target is a fraction of the interval (5%%-10%%)", c.Target, c.Interval)
	}
	return c, nil
}

// Check reports whether c is valid: a *ConfigError naming the setting to
// change, or nil.
func (c Config) Check() error {
	_, err := c.withDefaults(minQuantum)
	return err
}
