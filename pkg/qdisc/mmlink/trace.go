package mmlink

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"
)

// Bounds on a trace: a trace is read where the qdisc is configured, so a
// file that is too large is refused rather than read into memory.
// mahimahi's own traces are well within them (TMobile-LTE-driving.down:
// 3.4 MB, 505078 lines).
const (
	// MaxTraceBytes is the largest trace file read, 32 MiB.
	MaxTraceBytes = 32 << 20
	// MaxTraceLines is the most opportunities a trace has.
	MaxTraceLines = 1 << 22
)

// Trace is a link's schedule in mahimahi's format: the times, in ms from
// the trace's start, of its delivery opportunities, each for
// OpportunityBytes; several at one time are several opportunities then.
// The trace repeats when it ends: its period is its last time. A Trace is
// immutable, and shared by the qdiscs built from it.
type Trace struct {
	name string
	ms   []uint32
}

// NewTrace returns the trace named name whose opportunities are at ms (a
// copy is kept), or an error saying what to change: mahimahi's rules
// (at least one time, none before the one above it, the last after 0)
// and MaxTraceLines.
func NewTrace(name string, ms []uint32) (*Trace, error) {
	switch {
	case len(ms) == 0:
		return nil, fmt.Errorf("trace %s has no timestamps; give at least one line, a time in ms", name)
	case len(ms) > MaxTraceLines:
		return nil, fmt.Errorf("trace %s has %d lines, more than %d; give a shorter trace (it repeats)", name, len(ms), MaxTraceLines)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i] < ms[i-1] {
			return nil, fmt.Errorf("trace %s: line %d (%d ms) is before line %d (%d ms); timestamps must not decrease", name, i+1, ms[i], i, ms[i-1])
		}
	}
	if ms[len(ms)-1] == 0 {
		return nil, errZeroPeriod(name)
	}
	return &Trace{name: name, ms: slices.Clip(slices.Clone(ms))}, nil
}

func errZeroPeriod(name string) error {
	return fmt.Errorf("trace %s ends at 0 ms: it repeats every last timestamp, so it must last longer than 0 ms; end it with a later time", name)
}

// ReadTrace reads the trace file at path (see ParseTrace), refusing one
// larger than MaxTraceBytes.
func ReadTrace(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w (give a trace file in mahimahi's format, or %s)", path, errors.Unwrap(err), builtinNames())
	}
	defer f.Close()
	return ParseTrace(path, f)
}

// ParseTrace reads a trace in mahimahi's format (mm-link's LinkQueue) from
// r, named name in errors: one whole number of ms a line, none below the
// line above, the last above 0, no empty line. As mahimahi does, it
// reads a leading '+' and no sign; unlike mahimahi it also takes blanks
// around the number and a CR before the newline. A final newline is not
// an empty line. It refuses more than MaxTraceBytes or MaxTraceLines.
func ParseTrace(name string, r io.Reader) (*Trace, error) {
	c := &counter{r: io.LimitReader(r, MaxTraceBytes+1)}
	s := bufio.NewScanner(c)
	s.Buffer(make([]byte, 0, 64<<10), MaxTraceBytes+1)
	var ms []uint32
	for line := 1; s.Scan(); line++ {
		if c.n > MaxTraceBytes {
			break
		}
		v, err := parseLine(s.Bytes())
		if err != nil {
			return nil, fmt.Errorf("line %d of trace %s: %w", line, name, err)
		}
		if len(ms) == MaxTraceLines {
			return nil, fmt.Errorf("trace %s has more than %d lines; give a shorter trace (it repeats)", name, MaxTraceLines)
		}
		if n := len(ms); n > 0 && v < ms[n-1] {
			return nil, fmt.Errorf("line %d of trace %s: %d ms is before the line above's %d ms; timestamps must not decrease", line, name, v, ms[n-1])
		}
		ms = append(ms, v)
	}
	if err := s.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	if c.n > MaxTraceBytes {
		return nil, fmt.Errorf("trace %s is larger than %d MiB; give a shorter trace (it repeats)", name, MaxTraceBytes>>20)
	}
	return NewTrace(name, ms)
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// parseLine reads one line's time in ms.
func parseLine(b []byte) (uint32, error) {
	t := bytes.TrimRight(b, "\r")
	t = bytes.Trim(t, " \t")
	if len(t) == 0 {
		if len(b) == 0 {
			return 0, fmt.Errorf("an empty line; remove it (mahimahi refuses empty lines too)")
		}
		return 0, fmt.Errorf("a blank line; remove it")
	}
	digits := bytes.TrimPrefix(t, []byte("+"))
	v, err := strconv.ParseUint(string(digits), 10, 32)
	if err != nil || len(digits) == 0 || digits[0] < '0' || digits[0] > '9' {
		return 0, fmt.Errorf("%q is not a whole number of ms; each line is one delivery opportunity's time, from 0 to %d ms", excerpt(t), uint32(1<<32-1))
	}
	return uint32(v), nil
}

// excerpt is at most the first 24 bytes of b, for an error.
func excerpt(b []byte) string {
	if len(b) > 24 {
		return string(b[:24]) + "..."
	}
	return string(b)
}

// Name returns the trace's name: a built-in's, or the path it was read
// from.
func (t *Trace) Name() string { return t.name }

// Len returns the number of opportunities in one period.
func (t *Trace) Len() int { return len(t.ms) }

// PeriodMS returns the trace's period in ms: its last time.
func (t *Trace) PeriodMS() uint32 { return t.ms[len(t.ms)-1] }

// Period returns the trace's period.
func (t *Trace) Period() time.Duration { return time.Duration(t.PeriodMS()) * time.Millisecond }

// Times returns a copy of the opportunities' times, in ms.
func (t *Trace) Times() []uint32 { return slices.Clone(t.ms) }

// RateBits returns the trace's mean rate in bits a second, as mahimahi's
// traces are read: 1500 bytes (one MTU-sized packet) an opportunity.
func (t *Trace) RateBits() float64 {
	return float64(len(t.ms)) * 1500 * 8 * 1000 / float64(t.PeriodMS())
}

// Equal reports whether t and o are the same trace: the same name and
// times.
func (t *Trace) Equal(o *Trace) bool {
	if t == nil || o == nil {
		return t == o
	}
	return t == o || (t.name == o.name && slices.Equal(t.ms, o.ms))
}

// WriteTo writes t in mahimahi's format: one time a line.
func (t *Trace) WriteTo(w io.Writer) (int64, error) {
	b := bufio.NewWriter(w)
	var n int64
	var buf [16]byte
	for _, v := range t.ms {
		k, err := b.Write(append(strconv.AppendUint(buf[:0], uint64(v), 10), '\n'))
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, b.Flush()
}
