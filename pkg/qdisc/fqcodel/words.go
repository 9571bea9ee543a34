package fqcodel

import (
	"fmt"
	"strings"
)

// Words writes c in tc-fq_codel's words exactly, as Parse reads them back
// to the same Config: the knobs set (0 is Linux's default, left out),
// times in microseconds (tc's resolution), noecn where ECN is off. String
// is `tc qdisc show`'s line instead ("limit 10240p ..."), which Parse
// does not read.
func (c Config) Words() string {
	var w []string
	for _, x := range []struct {
		word string
		v    uint32
	}{{"limit", c.Limit}, {"flows", c.Flows}, {"quantum", c.Quantum}, {"memory_limit", c.MemoryLimit}, {"drop_batch", c.DropBatch}} {
		if x.v != 0 {
			w = append(w, fmt.Sprintf("%s %d", x.word, x.v))
		}
	}
	for _, x := range []struct {
		word string
		v    int64
	}{{"target", c.Target.Microseconds()}, {"interval", c.Interval.Microseconds()}, {"ce_threshold", c.CEThreshold.Microseconds()}} {
		if x.v != 0 {
			w = append(w, fmt.Sprintf("%s %dus", x.word, x.v))
		}
	}
	if c.CESelector != 0 || c.CEMask != 0 {
		w = append(w, fmt.Sprintf("ce_threshold_selector %#x/%#x", c.CESelector, c.CEMask))
	}
	if c.NoECN {
		w = append(w, "noecn")
	}
	return strings.Join(w, " ")
}

// Options are a Config as the registry holds it (Kind): its String is
// Words, which Kind.Parse reads back to the same Options.
type Options Config

// String writes o in tc-fq_codel's words (Config.Words).
func (o Options) String() string { return Config(o).Words() }
