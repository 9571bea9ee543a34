package fqcodel

import (
	"fmt"
	"time"
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
	// defaults 5 ms and 100 ms).
	Target   time.Duration
	Interval time.Duration
	// Quantum is the bytes a flow may send per round (tc "quantum";
	// default the link's MTU plus header, at least 256).
	Quantum uint32
	// MemoryLimit bounds the memory the queued packets take, in bytes (tc
	// "memory_limit"; default 32 MB).
	MemoryLimit uint32
	// DropBatch is the most packets dropped at once from the fattest flow
	// when a limit is passed (tc "drop_batch"; default 64).
	DropBatch uint32
	// NoECN drops ECN-capable packets instead of marking them CE (tc
	// "noecn"; ECN is on by default).
	NoECN bool
}

// Linux's defaults.
const (
	DefaultLimit       = 10240
	DefaultFlows       = 1024
	DefaultTarget      = 5 * time.Millisecond
	DefaultInterval    = 100 * time.Millisecond
	DefaultMemoryLimit = 32 << 20
	DefaultDropBatch   = 64
	MaxFlows           = 65536
	minQuantum         = 256
)

// ConfigError says which setting is wrong, by tc's name, and what to
// change.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "fq_codel " + e.Field + ": " + e.Msg }

// withDefaults checks c and fills in its defaults; mtu is the link's MTU
// plus header (Linux's psched_mtu), the default quantum and CoDel's MTU.
func (c Config) withDefaults(mtu uint32) (Config, error) {
	switch {
	case c.Flows > MaxFlows:
		return c, &ConfigError{"flows", fmt.Sprintf("%d flows is more than %d; lower flows", c.Flows, MaxFlows)}
	case c.Target < 0 || c.Interval < 0:
		return c, &ConfigError{"target", fmt.Sprintf("target %v and interval %v must not be negative", c.Target, c.Interval)}
	case c.Target > time.Hour || c.Interval > time.Hour:
		return c, &ConfigError{"interval", "target and interval must be under an hour (CoDel's clock is 32 bits of microseconds)"}
	}
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
		c.Quantum = mtu
	}
	c.Quantum = max(c.Quantum, minQuantum)
	if c.MemoryLimit == 0 {
		c.MemoryLimit = DefaultMemoryLimit
	}
	c.MemoryLimit = min(c.MemoryLimit, 1<<31)
	if c.DropBatch == 0 {
		c.DropBatch = DefaultDropBatch
	}
	if c.Target > c.Interval {
		return c, &ConfigError{"target", fmt.Sprintf("target %v is above interval %v; a target is a fraction of the interval (5%%-10%%)", c.Target, c.Interval)}
	}
	return c, nil
}

// Check reports whether c is valid: a *ConfigError naming the setting to
// change, or nil.
func (c Config) Check() error {
	_, err := c.withDefaults(minQuantum)
	return err
}
