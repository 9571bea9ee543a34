package tbf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Parse reads a tbf in tc-tbf(8)'s words, the text after `tc qdisc add
// dev eth0 root` (the kind, tbf, and a root or handle word before it are
// optional):
//
//	tbf rate 10mbit burst 10k latency 50ms peakrate 20mbit mtu 1514 mpu 64 overhead 14 linklayer atm
//
// Every word of tc's tbf_parse_opt is taken, as it takes them: limit,
// latency, burst and peakrate, overhead and linklayer by any prefix
// ("lat 50ms"); buffer and maxburst for burst, minburst for mtu; sizes
// in tc's units, with a cell size (10k/8) that is read and ignored, as
// Linux has ignored rate tables since 3.8; a bare rate is bits per
// second, a bare time microseconds; linklayer ethernet, atm or adsl (ATM
// cells). mtu without peakrate is taken, as tc takes it, and shapes
// nothing. Each word at most once, rate and burst required, peakrate
// only with mtu, and limit and latency not both, as tc says; with
// neither, New's default limit (tc asks for one). Refused: a rate in
// percent of the device's speed (a netstack's link has none to read).
// An error names the word to fix.
func Parse(s string) (Config, error) {
	words := strings.Fields(s)
	var c Config
	seen := map[string]bool{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		key := tbfWord(w)
		switch {
		case key == "" && (w == "root" || w == "tbf"):
			continue
		case key == "" && w == "handle" && i+1 < len(words):
			i++
			continue
		case key == "":
			return Config{}, fmt.Errorf("tbf: unknown word %q: want rate, burst (buffer, maxburst), latency or limit, peakrate, mtu (minburst), mpu, overhead or linklayer", w)
		case seen[key]:
			return Config{}, fmt.Errorf("tbf: %s given twice (as %q); give it once", key, w)
		case i+1 == len(words):
			return Config{}, fmt.Errorf("tbf: %q needs a value", w)
		}
		seen[key] = true
		i++
		if err := c.setWord(key, words[i]); err != nil {
			return Config{}, fmt.Errorf("tbf: %s %q: %w", w, words[i], err)
		}
	}
	switch {
	case c.Rate == 0:
		return Config{}, errors.New("tbf: rate is required (rate 10mbit)")
	case c.Burst == 0:
		return Config{}, errors.New("tbf: burst is required (burst 10k): the bucket's depth, at least the link's largest packet")
	case c.PeakRate != 0 && c.MTU == 0:
		return Config{}, errors.New("tbf: peakrate needs mtu, the peak bucket's depth (mtu 1514)")
	case c.Limit != 0 && c.Latency != 0:
		return Config{}, errors.New("tbf: limit and latency both bound the queue; give one of them")
	}
	return c, nil
}

// tbfWord is the option w names, as tbf_parse_opt matches it: some by
// any prefix (iproute2's matches), the rest whole; "" for none.
func tbfWord(w string) string {
	prefixOf := func(option string) bool { return w != "" && strings.HasPrefix(option, w) }
	switch {
	case prefixOf("limit"):
		return "limit"
	case prefixOf("latency"):
		return "latency"
	case prefixOf("burst") || w == "buffer" || w == "maxburst":
		return "burst"
	case w == "mtu" || w == "minburst":
		return "mtu"
	case w == "mpu", w == "rate":
		return w
	case prefixOf("peakrate"):
		return "peakrate"
	case prefixOf("overhead"):
		return "overhead"
	case prefixOf("linklayer"):
		return "linklayer"
	}
	return ""
}

// setWord sets the option key from its value v.
func (c *Config) setWord(key, v string) error {
	var err error
	switch key {
	case "rate":
		c.Rate, err = parseRateWord(v)
	case "peakrate":
		c.PeakRate, err = parseRateWord(v)
	case "burst":
		c.Burst, err = parseSizeWord(v)
	case "mtu":
		c.MTU, err = parseSizeWord(v)
	case "limit":
		c.Limit, err = parseSizeWord(v)
	case "mpu":
		c.MPU, err = parseSizeWord(v)
	case "latency":
		c.Latency, err = rate.ParseTCTime(v)
	case "overhead":
		var n uint64
		n, err = strconv.ParseUint(v, 10, 16)
		if err != nil {
			return errors.New("want bytes 0 to 65535 in decimal (tc reads overhead as an unsigned 16-bit number)")
		}
		c.Overhead = int32(n)
	case "linklayer":
		switch {
		case strings.HasPrefix("ethernet", v) && v != "":
			c.ATM = false
		case strings.HasPrefix("atm", v) && v != "", strings.HasPrefix("adsl", v) && v != "":
			c.ATM = true
		default:
			return errors.New("want ethernet, atm or adsl")
		}
	}
	return err
}

// parseRateWord reads a rate as tc's get_rate64 does: tc's units, a bare
// number in bits per second.
func parseRateWord(v string) (uint64, error) {
	r, err := rate.ParseTCRate(v)
	if err == nil && r == 0 {
		err = errors.New("a rate of 0 sends nothing; give a rate such as 10mbit")
	}
	return r, err
}

// parseSizeWord reads a size as tc's get_size_and_cell does: tc's units,
// perhaps a cell size after a slash (a power of 2), read and ignored.
func parseSizeWord(v string) (uint32, error) {
	size, cell, hasCell := strings.Cut(v, "/")
	if hasCell {
		if n, err := strconv.ParseUint(cell, 10, 32); err != nil || n == 0 || n&(n-1) != 0 {
			return 0, errors.New("the cell size after the slash is a power of 2 (10k/8); or leave it out")
		}
	}
	n, err := rate.ParseSize(size)
	if err != nil {
		return 0, err
	}
	if n > math.MaxUint32 {
		return 0, fmt.Errorf("%d bytes is more than tc's %d (a u32)", n, uint32(math.MaxUint32))
	}
	return uint32(n), nil
}
