package mmlink

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds of the drop-tail queue in front of the link.
const (
	// DefaultLimit is the packets that may wait where no limit is given:
	// tc's default queue length (txqueuelen). mahimahi's default queue is
	// unbounded; here the senders may be untrusted, so none is.
	DefaultLimit = 1000
	// MaxLimit is the most packets a limit may let wait.
	MaxLimit = 1 << 20
)

// Config is an mmlink: the trace of its opportunities, and the drop-tail
// queue in front of it (mahimahi's --uplink-queue=droptail
// --uplink-queue-args="packets=LIMIT,bytes=BYTES").
type Config struct {
	// Trace is the link's schedule.
	Trace *Trace
	// Limit is the most packets that may wait (mahimahi's packets=N),
	// DefaultLimit where not given; the packet partly carried does not
	// count, as in mahimahi.
	Limit uint32
	// Bytes, if not 0, is the most bytes that may wait (mahimahi's
	// bytes=N), each packet counted as Charge counts it.
	Bytes uint32
}

// Check returns an error saying what to change if c cannot run.
func (c Config) Check() error {
	switch {
	case c.Trace == nil:
		return fmt.Errorf("mmlink: no trace; give trace FILE (or trace %s)", strings.Join(builtinList(), ", trace "))
	case c.Limit == 0:
		return fmt.Errorf("mmlink: limit 0 would refuse every packet; give a limit of 1 to %d packets", MaxLimit)
	case c.Limit > MaxLimit:
		return fmt.Errorf("mmlink: limit %d is above %d packets; give %d or fewer", c.Limit, MaxLimit, MaxLimit)
	}
	return nil
}

// Words writes c in mmlink's words, which Parse reads back to c (the
// trace read again from its name).
func (c Config) Words() string {
	var b strings.Builder
	if c.Trace != nil {
		b.WriteString("trace " + c.Trace.Name() + " ")
	}
	b.WriteString("limit " + strconv.FormatUint(uint64(c.Limit), 10))
	if c.Bytes != 0 {
		b.WriteString(" bytes " + strconv.FormatUint(uint64(c.Bytes), 10))
	}
	return b.String()
}

// String is Words.
func (c Config) String() string { return c.Words() }

// Equal reports whether c and o are the same configuration: the same
// trace and bounds.
func (c Config) Equal(o Config) bool {
	return c.Trace.Equal(o.Trace) && c.Limit == o.Limit && c.Bytes == o.Bytes
}
