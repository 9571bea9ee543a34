package htb

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

// ParseQdisc parses an htb qdisc in tc's words, the text after `tc qdisc
// add dev eth0`:
//
//	root handle 1: htb default 20 r2q 10 direct_qlen 100
//
// Every word is optional and may come in any order, at most once:
//
//   - root: where the qdisc is, optional (this htb is always the link's
//     root).
//   - handle: the qdisc's major, in hex (1: or 1); 1: if not given.
//   - htb: the kind, optional.
//   - default: the minor, in hex as tc reads it, of the class that takes
//     what no filter classifies: "default 20" is class 1:20 (0x10020)
//     under handle 1:. 0, or no default, is the direct queue, unshaped.
//   - r2q: the divisor of a leaf's rate into its quantum, 1 or more (10
//     if not given).
//   - direct_qlen: the direct queue's bound in packets, 1 or more (1000 if
//     not given).
//
// The classes and filters come from ParseClass and classify.ParseRule. An
// error names the word to fix.
func ParseQdisc(s string) (Config, error) {
	words := strings.Fields(s)
	var c Config
	seen := map[string]bool{}
	var def uint32
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch w {
		case "root", "htb", "handle", "default", "r2q", "direct_qlen":
		case "offload":
			return Config{}, errors.New("htb: offload hands htb to a NIC; this htb runs in the sandbox's netstack: leave offload out")
		case "parent":
			return Config{}, errors.New("htb: parent: this htb is the link's root qdisc; say root, or nothing")
		default:
			return Config{}, fmt.Errorf("htb: unknown word %q: want root, handle, htb, default, r2q or direct_qlen", w)
		}
		if seen[w] {
			return Config{}, fmt.Errorf("htb: %q given twice", w)
		}
		seen[w] = true
		if w == "root" || w == "htb" {
			continue
		}
		if i+1 == len(words) {
			return Config{}, fmt.Errorf("htb: %q needs a value", w)
		}
		i++
		v := words[i]
		var err error
		switch w {
		case "handle":
			c.Handle, err = parseHandleWord(v)
		case "default":
			// tc's htb_parse_opt reads default with get_u32 in hex;
			// Linux keeps only its low 16 bits (TC_H_MAKE).
			var n uint64
			n, err = strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X"), 16, 16)
			if err != nil {
				err = errors.New("want the default class's minor in hex, 0 to ffff (default 20 is class 1:20; 0 is the direct queue)")
			}
			def = uint32(n)
		case "r2q", "direct_qlen":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 32)
			switch {
			case err != nil:
				err = errors.New("want a number 1 to 4294967295 in decimal")
			// Linux raises an r2q of 0 to 1; here 0 means the
			// default, so 0 is refused rather than read as 10.
			case n == 0 && w == "r2q":
				err = fmt.Errorf("r2q is at least 1 (Linux would take 1); leave it out for %d", DefaultR2Q)
			// Linux takes a direct_qlen of 0, and drops every packet
			// bound for the direct queue; here 0 means the default.
			case n == 0:
				err = fmt.Errorf("direct_qlen 0 would drop every packet no class takes; give at least 1, or leave it out for %d", DefaultDirectQLen)
			}
			if w == "r2q" {
				c.R2Q = uint32(n)
			} else {
				c.DirectQLen = uint32(n)
			}
		}
		if err != nil {
			return Config{}, fmt.Errorf("htb: %s %q: %w", w, v, err)
		}
	}
	if def != 0 {
		major := c.Handle >> 16
		if major == 0 {
			major = 1
		}
		c.Default = major<<16 | def
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseClassIDWord reads a class as tc's get_tc_classid does, major:minor
// in hex (1:10), where "1:" is minor 0, the qdisc itself.
func parseClassIDWord(v string) (uint32, error) {
	maj, min, ok := strings.Cut(v, ":")
	if !ok {
		return 0, errors.New("want tc's major:minor in hex, e.g. 1:10 (1: for the qdisc)")
	}
	if min == "" {
		min = "0"
	}
	M, err1 := parseHex16(maj)
	m, err2 := parseHex16(min)
	switch {
	case err1 != nil || err2 != nil:
		return 0, errors.New("want tc's major:minor, each 0 to ffff in hex, e.g. 1:10")
	case M == 0:
		return 0, errors.New("major 0 is no qdisc's handle; give the qdisc's major, e.g. 1:10")
	}
	return M<<16 | m, nil
}

// parseHandleWord reads a qdisc's handle as tc's get_qdisc_handle does: a
// major in hex, with or without the colon (1: or 1).
func parseHandleWord(v string) (uint32, error) {
	maj, min, _ := strings.Cut(v, ":")
	M, err := parseHex16(maj)
	switch {
	case err != nil:
		return 0, errors.New("want the qdisc's major in hex, 1 to ffff, e.g. 1:")
	case M == 0:
		return 0, errors.New("major 0 is no handle; give 1 to ffff, e.g. 1:")
	case min != "" && strings.Trim(min, "0") != "":
		return 0, fmt.Errorf("a qdisc's handle has minor 0 (its classes have the others); write %x:", M)
	}
	return M << 16, nil
}

// parseHex16 reads 0 to ffff in hex, digits only.
func parseHex16(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 16, 16)
	return uint32(n), err
}

// parseRateWord reads a rate as tc's get_rate64 does: a bare number is bits
// per second.
func parseRateWord(v string) (uint64, error) {
	if strings.HasSuffix(v, "%") {
		return 0, errors.New("a percentage of the link's speed is not taken; give a rate such as 10mbit")
	}
	if strings.Trim(v, "0123456789.") != "" {
		return rate.ParseRate(v)
	}
	// A bare number: bits per second, as tc reads it.
	bps, err := rate.ParseRate(v + "bit")
	if err != nil {
		return 0, fmt.Errorf("a bare number is bits per second in tc's words (say 10mbit, or 1250000bps for bytes): %w", err)
	}
	return bps, nil
}

// parseSizeWord reads a size as tc's get_size_and_cell does: bytes in tc's
// units, perhaps followed by a cell size (/8), a power of 2, which is
// ignored.
func parseSizeWord(v string) (uint32, error) {
	size, cell, hasCell := strings.Cut(v, "/")
	if hasCell {
		n, err := strconv.ParseUint(cell, 10, 32)
		if err != nil || n == 0 || n&(n-1) != 0 {
			return 0, errors.New("the cell size after the slash is a power of 2 (15k/8); or leave the cell out")
		}
	}
	n, err := rate.ParseSize(size)
	if err != nil {
		return 0, err
	}
	if n > math.MaxUint32 {
		return 0, fmt.Errorf("%d bytes is more than tc's %d (an unsigned int)", n, uint32(math.MaxUint32))
	}
	return uint32(n), nil
}

// rateWord writes a rate exactly, in the largest of tc's units that
// divides it: "10Mbit", "1500Kbit", "12bit" (bytes per second, "Bps", past
// what bits per second can hold in 64 bits).
func rateWord(bytesPerSec uint64) string {
	if bytesPerSec > math.MaxUint64/8 {
		return fmt.Sprintf("%dBps", bytesPerSec)
	}
	b := bytesPerSec * 8
	for _, u := range []struct {
		div  uint64
		unit string
	}{{1e12, "Tbit"}, {1e9, "Gbit"}, {1e6, "Mbit"}, {1e3, "Kbit"}} {
		if b >= u.div && b%u.div == 0 {
			return fmt.Sprintf("%d%s", b/u.div, u.unit)
		}
	}
	return fmt.Sprintf("%dbit", b)
}

// sizeWord writes a size exactly, in tc's units: "2Mb", "15Kb", "1514b".
func sizeWord(n uint32) string {
	switch {
	case n != 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMb", n>>20)
	case n != 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKb", n>>10)
	}
	return fmt.Sprintf("%db", n)
}

// ParseFilter parses a filter in tc's words, the text after `tc filter add
// dev eth0`, as classify.ParseRule's words with the chain it is attached
// to:
//
//	parent 1:10 dst 10.1.0.0/16 proto tcp classid 1:101
//
// parent (anywhere among the words, at most once) is the inner class whose
// chain the filter joins; left out, or the qdisc's handle (1:), it is the
// qdisc's root chain, and parent is returned as 0. A filter with no match
// words ("parent 1:10 classid 1:101") is tc's matchall: it takes every
// packet that reaches it. An error names the word to fix.
func ParseFilter(s string) (parent uint32, r classify.Rule, err error) {
	words := strings.Fields(s)
	rest := make([]string, 0, len(words))
	seen := false
	for i := 0; i < len(words); i++ {
		if words[i] != "parent" {
			rest = append(rest, words[i])
			continue
		}
		if seen {
			return 0, classify.Rule{}, errors.New(`htb: "parent" given twice`)
		}
		seen = true
		if i+1 == len(words) {
			return 0, classify.Rule{}, errors.New(`htb: "parent" needs a value: the class whose filters these are, e.g. parent 1:10 (1: for the qdisc's own)`)
		}
		i++
		id, err := parseClassIDWord(words[i])
		if err != nil {
			return 0, classify.Rule{}, fmt.Errorf("htb: parent %q: %w", words[i], err)
		}
		if id&0xffff != 0 {
			parent = id
		}
	}
	r, err = classify.ParseRule(strings.Join(rest, " "))
	if err != nil {
		return 0, classify.Rule{}, err
	}
	if parent != 0 && parent>>16 != r.Class>>16 {
		return 0, classify.Rule{}, fmt.Errorf("htb: parent %s and classid %s are of different qdiscs; a filter sends packets to a class of its own qdisc", classify.ClassID(parent), classify.ClassID(r.Class))
	}
	return parent, r, nil
}

// FilterString writes a filter of the chain of class parent (0: the root
// chain) in ParseFilter's words: "parent 1:10 dst 10.1.0.0/16 classid
// 1:101", or r's own words for the root chain.
func FilterString(parent uint32, r classify.Rule) string {
	if parent == 0 {
		return r.String()
	}
	return "parent " + classify.ClassID(parent) + " " + r.String()
}
