package htb

// This file holds a class in tc's words: ParseClass, its quota's words,
// and ClassConfig's String, which writes them back.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// ParseClass parses a class in tc's words, the text after `tc class add
// dev eth0`:
//
//	parent 1:1 classid 1:10 htb rate 10mbit ceil 20mbit burst 15k cburst 15k prio 1 quantum 1514 overhead 14 mpu 64
//
// parent (or root), classid and rate are required; every other word is
// optional and may come in any order, at most once (tc's abbreviations,
// such as "pr" for prio, are not taken):
//
//   - parent: the parent class (1:1), or the qdisc (1:) for a class at the
//     top; "root" alone (or "parent root") says the same as "parent 1:".
//   - classid: the class, major:minor in hex as tc writes it (1:10 is
//     0x00010010).
//   - htb: the kind, optional.
//   - rate, ceil: rates in tc's units (10mbit, 1gbit, 125kbps). A bare
//     number is bits per second, as in tc's get_rate ("rate 1000000" is
//     1mbit); note that runsc's --qdisc-tbf-rate reads a bare number as
//     bytes per second. ceil 0, or no ceil, is the rate. A percentage of
//     the link's speed (tc's "10%") is not taken.
//   - burst (or buffer, maxburst), cburst (or cbuffer, cmaxburst): bytes,
//     in tc's size units (15k is 15360 bytes; a bare number is bytes). A
//     cell size after a slash (15k/8, as tc -d shows) is read and ignored,
//     as Linux ignores tc's rate tables. Left out, tc's default: rate/1e9
//   - mtu (ceil's for cburst).
//   - mtu: only for the default burst and cburst (tc's, 1600 if not given).
//   - prio 0-7, quantum (bytes; 0 computes it from rate/r2q), overhead and
//     mpu (bytes, 0-65535), in decimal.
//   - linklayer: only ethernet (ATM cells are tbf's, not yet htb's:
//     see docs/threat-model.md).
//
// A parsed class is checked as ClassConfig.Validate checks it. An error
// names the word to fix.
func ParseClass(s string) (ClassConfig, error) {
	words := strings.Fields(s)
	var c ClassConfig
	seen := map[string]bool{}
	mtu := uint64(DefaultMTU)
	for i := 0; i < len(words); i++ {
		w := words[i]
		key := w
		switch w {
		case "buffer", "maxburst":
			key = "burst"
		case "cbuffer", "cmaxburst":
			key = "cburst"
		case "root":
			key = "parent"
		}
		switch key {
		case "htb", "parent", "classid", "rate", "ceil", "burst", "cburst", "prio", "quantum", "overhead", "mpu", "mtu", "linklayer", "quota", "per", "then":
		default:
			return ClassConfig{}, fmt.Errorf("htb: unknown word %q: want parent (or root), classid, htb, rate, ceil, burst, cburst, prio, quantum, overhead, mpu, mtu, linklayer, or quota ... per ... then ...", w)
		}
		if seen[key] {
			return ClassConfig{}, fmt.Errorf("htb: %q given twice", w)
		}
		seen[key] = true
		if w == "htb" || w == "root" {
			continue
		}
		if i+1 == len(words) {
			return ClassConfig{}, fmt.Errorf("htb: %q needs a value", w)
		}
		i++
		v := words[i]
		var err error
		switch key {
		case "parent":
			if v != "root" {
				c.Parent, err = parseClassIDWord(v)
			}
		case "classid":
			c.ID, err = parseClassIDWord(v)
		case "rate":
			c.Rate, err = parseRateWord(v)
			if err == nil && c.Rate == 0 {
				err = errors.New("the class's guaranteed rate must be above 0")
			}
		case "ceil":
			c.Ceil, err = parseRateWord(v)
		case "burst":
			c.Burst, err = parseSizeWord(v)
		case "cburst":
			c.CBurst, err = parseSizeWord(v)
		case "prio":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 64)
			switch {
			case err != nil:
				err = fmt.Errorf("want a number 0 to %d", NumPrio-1)
			case n >= NumPrio:
				err = fmt.Errorf("prio is 0 (served first) to %d (Linux would silently take %d)", NumPrio-1, NumPrio-1)
			}
			c.Prio = uint8(min(n, NumPrio-1))
		case "quantum":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 32)
			if err != nil || n > MaxExplicitQuantum {
				err = fmt.Errorf("want bytes 0 to %d in decimal (0 computes it from rate/r2q)", MaxExplicitQuantum)
			}
			c.Quantum = uint32(n)
		case "overhead", "mpu":
			// tc's get_u16: unsigned, in decimal.
			var n uint64
			n, err = strconv.ParseUint(v, 10, 16)
			if err != nil {
				err = errors.New("want bytes 0 to 65535 in decimal")
			}
			if key == "overhead" {
				c.Overhead = int32(n)
			} else {
				c.MPU = uint32(n)
			}
		case "mtu":
			mtu, err = strconv.ParseUint(v, 10, 32)
			switch {
			case err != nil:
				err = errors.New("want bytes 1 to 4294967295 in decimal")
			// tc takes mtu 0, and its default burst below 1 gbit/s is
			// then 0; here a burst of 0 is the default.
			case mtu == 0:
				err = errors.New("mtu 0 would leave the default burst empty below 1gbit; give 1 or more (tc's is 1600)")
			}
		case "quota", "per", "then":
			if c.Quota == nil {
				c.Quota = &Quota{}
			}
			err = parseQuotaWord(c.Quota, key, v)
		case "linklayer":
			if v != "ethernet" {
				err = errors.New("only ethernet is taken: htb's classes have no ATM cell framing (tbf's linklayer atm has); give ethernet, or leave linklayer out")
			}
		}
		if err != nil {
			return ClassConfig{}, fmt.Errorf("htb: %s %q: %w", w, v, err)
		}
	}
	switch {
	case !seen["classid"]:
		return ClassConfig{}, errors.New("htb: no classid: name the class, e.g. classid 1:10")
	case !seen["parent"]:
		return ClassConfig{}, errors.New("htb: no parent: give the parent class (parent 1:1), or parent 1: (or root) for a class at the top")
	case !seen["rate"]:
		return ClassConfig{}, errors.New("htb: no rate: give the rate the class is guaranteed, e.g. rate 10mbit")
	case c.Quota != nil && (!seen["quota"] || !seen["per"]):
		return ClassConfig{}, errors.New("htb: a quota needs its budget and its period: quota 50gb per 24h (then 1mbit, or then block, the default)")
	}
	if mtu != DefaultMTU {
		// tc's default buckets, computed here so that the Config
		// carries them (it has no mtu).
		ceil := c.Ceil
		if ceil == 0 {
			ceil = c.Rate
		}
		for _, b := range []struct {
			name  string
			depth *uint32
			rate  uint64
		}{{"burst", &c.Burst, c.Rate}, {"cburst", &c.CBurst, ceil}} {
			if *b.depth != 0 {
				continue
			}
			d := b.rate/rate.NanosPerSecond + mtu
			if d > math.MaxUint32 {
				return ClassConfig{}, fmt.Errorf("htb: mtu %d: the default %s, %d bytes, is more than 2^32-1 bytes; lower mtu, or give %s", mtu, b.name, d, b.name)
			}
			*b.depth = uint32(d)
		}
	}
	if err := c.Validate(); err != nil {
		return ClassConfig{}, err
	}
	return c, nil
}

// String writes c in ParseClass's words, as `tc class add dev eth0` takes
// them, settings left at their defaults left out:
//
//	parent 1:1 classid 1:10 htb rate 10Mbit ceil 20Mbit burst 15Kb prio 1
//
// A class at the top is "root" if its Parent is 0 and "parent 1:" if it is
// the qdisc's handle. Rates and sizes are exact, in the largest of tc's
// units that divides them (10Mbit, 1514b); ParseClass reads them back to
// the same ClassConfig. The Leaf qdisc, which has no words here, is left
// out.
func (c ClassConfig) String() string {
	var b strings.Builder
	switch {
	case c.Parent == 0:
		b.WriteString("root")
	case c.Parent&0xffff == 0:
		fmt.Fprintf(&b, "parent %x:", c.Parent>>16)
	default:
		fmt.Fprintf(&b, "parent %s", classify.ClassID(c.Parent))
	}
	fmt.Fprintf(&b, " classid %s htb rate %s", classify.ClassID(c.ID), rateWord(c.Rate))
	if c.Ceil != 0 {
		fmt.Fprintf(&b, " ceil %s", rateWord(c.Ceil))
	}
	if c.Burst != 0 {
		fmt.Fprintf(&b, " burst %s", sizeWord(c.Burst))
	}
	if c.CBurst != 0 {
		fmt.Fprintf(&b, " cburst %s", sizeWord(c.CBurst))
	}
	if c.Prio != 0 {
		fmt.Fprintf(&b, " prio %d", c.Prio)
	}
	if c.Quantum != 0 {
		fmt.Fprintf(&b, " quantum %d", c.Quantum)
	}
	if c.Overhead != 0 {
		fmt.Fprintf(&b, " overhead %d", c.Overhead)
	}
	if c.MPU != 0 {
		fmt.Fprintf(&b, " mpu %d", c.MPU)
	}
	if q := c.Quota; q != nil {
		then := "block"
		if q.Rate != 0 {
			then = rateWord(q.Rate)
		}
		fmt.Fprintf(&b, " quota %db per %v then %s", q.Bytes, q.Period, then)
	}
	return b.String()
}

// parseQuotaWord reads the value v of a quota's word key into q: quota
// (bytes, in tc's size units), per (a Go duration, or whole days: 30d),
// then (a rate, or block).
func parseQuotaWord(q *Quota, key, v string) error {
	switch key {
	case "quota":
		n, err := rate.ParseSize(v)
		if err != nil {
			return err
		}
		q.Bytes = n
	case "per":
		if d, ok := strings.CutSuffix(v, "d"); ok {
			n, err := strconv.ParseUint(d, 10, 16)
			if err != nil {
				return errors.New("want a duration such as 24h, 30d or 90m")
			}
			q.Period = time.Duration(n) * 24 * time.Hour
			return nil
		}
		p, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("want a duration such as 24h, 30d or 90m")
		}
		q.Period = p
	case "then":
		if v == "block" {
			q.Rate = 0
			return nil
		}
		r, err := parseRateWord(v)
		if err != nil {
			return err
		}
		q.Rate = r
	}
	return nil
}
