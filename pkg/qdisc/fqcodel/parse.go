package fqcodel

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Parse reads fq_codel in tc-fq_codel(8)'s words, the text after `tc
// qdisc add dev eth0 root` (the kind, fq_codel, and a root or handle
// word before it are optional):
//
//	fq_codel limit 10240 flows 1024 target 5ms interval 100ms quantum 1514 memory_limit 32mb drop_batch 64 ecn ce_threshold 1ms ce_threshold_selector 0x1/0x3
//
// Every word of tc's fq_codel_parse_opt is taken, whole, as it reads
// them: counts as get_unsigned does (decimal, 0x hex or 0 octal), times
// as get_time (a bare number is microseconds), memory_limit in tc's size
// units, ce_threshold_selector as VALUE/MASK bytes; ecn and noecn; a word
// given twice keeps the last, as tc's does. The result is checked as New
// checks it. An error names the word to fix.
func Parse(s string) (Config, error) { return parseOver(Config{}, s) }

// Changed reads a change's words s over c, as Linux's fq_codel_change
// applies `tc qdisc change ... fq_codel s`: each word sets what it names
// (ecn and noecn too), and every setting they do not name keeps c's
// value; flows named otherwise than c's are then refused by Change, as
// fq_codel_change refuses them. The result is checked as New checks it.
func (c Config) Changed(s string) (Config, error) { return parseOver(c, s) }

// parseOver reads words s as Parse does, over c: what they do not name
// keeps c's value.
func parseOver(c Config, s string) (Config, error) {
	words := strings.Fields(s)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch w {
		case "root", "fq_codel":
			continue
		case "handle":
			i++
			continue
		case "ecn", "noecn":
			c.NoECN = w == "noecn"
			continue
		case "limit", "flows", "quantum", "drop_batch", "target", "interval", "ce_threshold", "ce_threshold_selector", "memory_limit":
		default:
			return Config{}, fmt.Errorf("fq_codel: unknown word %q: want limit, flows, quantum, target, interval, memory_limit, drop_batch, ecn or noecn, ce_threshold or ce_threshold_selector", w)
		}
		if i+1 == len(words) {
			return Config{}, fmt.Errorf("fq_codel: %q needs a value", w)
		}
		i++
		if err := c.setWord(w, words[i]); err != nil {
			return Config{}, fmt.Errorf("fq_codel: %s %q: %w", w, words[i], err)
		}
	}
	return c, c.Check()
}

// setWord sets the knob w from its value v.
func (c *Config) setWord(w, v string) error {
	var err error
	switch w {
	case "limit":
		c.Limit, err = parseUnsigned(v)
	case "flows":
		c.Flows, err = parseUnsigned(v)
	case "quantum":
		c.Quantum, err = parseUnsigned(v)
	case "drop_batch":
		c.DropBatch, err = parseUnsigned(v)
	case "target":
		c.Target, err = rate.ParseTCTime(v)
	case "interval":
		c.Interval, err = rate.ParseTCTime(v)
	case "ce_threshold":
		c.CEThreshold, err = rate.ParseTCTime(v)
		if err == nil && c.CEThreshold == 0 {
			// Linux's ce_threshold 0 marks whatever waited a unit of
			// 1024 ns; here 0 is none, and 1us is Linux's same 0.
			c.CEThreshold = 1000
		}
	case "ce_threshold_selector":
		value, mask, ok := strings.Cut(v, "/")
		if !ok {
			return errors.New("want VALUE/MASK, bytes of the DS field (0x1/0x3)")
		}
		var sel, msk uint64
		if sel, err = strconv.ParseUint(value, 0, 8); err == nil {
			msk, err = strconv.ParseUint(mask, 0, 8)
		}
		if err != nil {
			return errors.New("want VALUE/MASK, each a byte, 0 to 255 (0x1/0x3)")
		}
		c.CESelector, c.CEMask = uint8(sel), uint8(msk)
	case "memory_limit":
		var n uint64
		if n, err = rate.ParseSize(v); err == nil && n > math.MaxUint32 {
			err = fmt.Errorf("more than tc's %d bytes (a u32)", uint32(math.MaxUint32))
		}
		c.MemoryLimit = uint32(n)
	}
	return err
}

// parseUnsigned reads a count as tc's get_unsigned does.
func parseUnsigned(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 0, 32)
	if err != nil {
		return 0, errors.New("want a count, 0 to 4294967295 (decimal, or 0x hex)")
	}
	return uint32(n), nil
}
