package mmlink_test

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
)

// TestParseTrace: mahimahi's trace format, and an error that says which
// line is wrong and what to change for each file mahimahi refuses.
func TestParseTrace(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []uint32
		err        string
	}{
		{"one line, no newline", "1", []uint32{1}, ""},
		{"mahimahi's own kind", "0\n94\n106\n106\n133\n", []uint32{0, 94, 106, 106, 133}, ""},
		{"CRLF and blanks", " 5\r\n\t7 \r\n", []uint32{5, 7}, ""},
		{"a plus", "+3\n", []uint32{3}, ""},
		{"the largest time", "4294967295\n", []uint32{1<<32 - 1}, ""},
		{"empty file", "", nil, "has no timestamps; give at least one line"},
		{"an empty line", "1\n\n2\n", nil, "line 2 of trace f: an empty line; remove it"},
		{"a blank line", "1\n  \n", nil, "line 2 of trace f: a blank line"},
		{"a trailing empty line", "1\n2\n\n", nil, "line 3 of trace f: an empty line"},
		{"not a number", "1\nten\n", nil, `line 2 of trace f: "ten" is not a whole number of ms`},
		{"negative", "-1\n", nil, `"-1" is not a whole number of ms`},
		{"a fraction", "1.5\n", nil, `"1.5" is not a whole number`},
		{"too large", "4294967296\n", nil, "from 0 to 4294967295 ms"},
		{"two numbers", "1 2\n", nil, `"1 2" is not a whole number`},
		{"decreasing", "5\n3\n", nil, "line 2 of trace f: 3 ms is before the line above's 5 ms; timestamps must not decrease"},
		{"ends at 0", "0\n0\n", nil, "trace f ends at 0 ms: it repeats every last timestamp"},
		{"a long bad line is cut", strings.Repeat("x", 100) + "\n", nil, `"xxxxxxxxxxxxxxxxxxxxxxxx..."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := mmlink.ParseTrace("f", strings.NewReader(tc.text))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tr.Times(); !slices.Equal(got, tc.want) {
				t.Errorf("times %v, want %v", got, tc.want)
			}
			var b bytes.Buffer
			if _, err := tr.WriteTo(&b); err != nil {
				t.Fatal(err)
			}
			again, err := mmlink.ParseTrace("f", &b)
			if err != nil || !again.Equal(tr) {
				t.Errorf("written and read back: %v, %v", again, err)
			}
		})
	}
}

// lines is a reader of n lines "1\n", made as they are read.
type lines struct{ n int }

func (l *lines) Read(p []byte) (int, error) {
	k := 0
	for ; k+1 < len(p) && l.n > 0; k += 2 {
		p[k], p[k+1] = '1', '\n'
		l.n--
	}
	if k == 0 {
		return 0, io.EOF
	}
	return k, nil
}

// TestTraceBounds: a trace of more than MaxTraceLines lines, or of more
// than MaxTraceBytes, is refused, saying so, without being read whole.
func TestTraceBounds(t *testing.T) {
	if _, err := mmlink.ParseTrace("f", &lines{n: mmlink.MaxTraceLines}); err != nil {
		t.Errorf("%d lines: %v", mmlink.MaxTraceLines, err)
	}
	if _, err := mmlink.ParseTrace("f", &lines{n: mmlink.MaxTraceLines + 1}); err == nil || !strings.Contains(err.Error(), "more than 4194304 lines") {
		t.Errorf("%d lines: error %v", mmlink.MaxTraceLines+1, err)
	}
	big := io.MultiReader(strings.NewReader("1"), strings.NewReader(strings.Repeat("0", mmlink.MaxTraceBytes)))
	if _, err := mmlink.ParseTrace("f", big); err == nil || !strings.Contains(err.Error(), "larger than 32 MiB") {
		t.Errorf("a line of 32 MiB: error %v", err)
	}
	if _, err := mmlink.NewTrace("f", make([]uint32, mmlink.MaxTraceLines+1)); err == nil {
		t.Error("NewTrace took too many times")
	}
	if _, err := mmlink.ReadTrace("testdata/no-such-trace"); err == nil || !strings.Contains(err.Error(), "a built-in trace: lte or 3g") {
		t.Errorf("a missing file: error %v", err)
	}
}

// TestTraceRate: the mean rate is mahimahi's reading, 1500 bytes an
// opportunity: one a ms is 12 Mbit/s.
func TestTraceRate(t *testing.T) {
	for _, tc := range []struct {
		times []uint32
		bits  float64
	}{
		{[]uint32{1}, 12e6},
		{[]uint32{0, 2}, 12e6},
		{[]uint32{5, 5, 5, 10}, 4.8e6},
	} {
		tr, err := mmlink.NewTrace("t", tc.times)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.RateBits(); got != tc.bits {
			t.Errorf("%v: %g bit/s, want %g", tc.times, got, tc.bits)
		}
	}
}
