package htb

// This file holds the words the qdisc, class and filter lines share, read
// and written as tc does: class ids, hex numbers, rates and sizes.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

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

// parseHex16 reads 0 to ffff in hex, digits only.
func parseHex16(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 16, 16)
	return uint32(n), err
}

// parseRateWord reads a rate as tc's get_rate64 does (rate.ParseTCRate).
func parseRateWord(v string) (uint64, error) { return rate.ParseTCRate(v) }

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
