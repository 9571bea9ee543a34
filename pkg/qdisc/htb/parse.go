package htb

// This file holds the qdisc line in tc's words: ParseQdisc and the
// handle it reads. Config's String is in show.go; the class and filter
// lines are in parseclass.go and parsefilter.go, the words they share
// (class ids, rates, sizes) in parsewords.go.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

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
