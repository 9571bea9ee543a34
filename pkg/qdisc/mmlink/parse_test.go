package mmlink_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
)

// writeTrace writes a trace file in a test's directory and returns its
// path.
func writeTrace(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "link.trace")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParse: mmlink's words, read and written back to the same words
// (Parse(Words) is the same Config), and for each wrong word an error
// that says what to change.
func TestParse(t *testing.T) {
	file := writeTrace(t, "1\n1\n3\n")
	for _, tc := range []struct {
		words, want, err string
	}{
		{words: "trace " + file, want: "trace " + file + " limit 1000"},
		{words: "trace lte limit 50", want: "trace lte limit 50"},
		{words: "limit 7 bytes 30kb trace 3g", want: "trace 3g limit 7 bytes 30720"},
		{words: "trace 3g droptail bytes 1504", want: "trace 3g limit 1000 bytes 1504"},
		{words: "", err: "no trace; give trace FILE (or trace lte, trace 3g)"},
		{words: "limit 5", err: "no trace"},
		{words: "trace", err: `"trace" needs a value`},
		{words: "trace lte limit 0", err: "limit \"0\": give a count of packets from 1 to 1048576"},
		{words: "trace lte limit 1048577", err: "from 1 to 1048576"},
		{words: "trace lte limit ten", err: "give a count of packets"},
		{words: "trace lte bytes 1000", err: "give 1504 bytes (one full packet) to"},
		{words: "trace lte bytes lots", err: `bytes "lots"`},
		{words: "trace lte trace 3g", err: `"trace" is given twice`},
		{words: "trace lte packets 5", err: "mahimahi's packets=N; give limit N"},
		{words: "trace lte packets=5", err: "mahimahi's packets=N; give limit N"},
		{words: "trace lte bytes=5", err: "mahimahi's bytes=N; give bytes N"},
		{words: "trace lte infinite", err: "an infinite queue is not offered"},
		{words: "trace lte codel", err: "codel queue is not offered"},
		{words: "trace lte rate 1mbit", err: `"rate" is not a word of mmlink's (trace NAME|FILE [limit PACKETS] [bytes BYTES])`},
		{words: "trace /no/such/file", err: "trace /no/such/file: no such file or directory (give a trace file in mahimahi's format, or a built-in trace: lte or 3g)"},
		{words: "trace " + writeTrace(t, "3\n2\n"), err: "line 2 of trace"},
	} {
		c, err := mmlink.Parse(tc.words)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.words, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.words, err)
			continue
		}
		if got := c.Words(); got != tc.want {
			t.Errorf("%q reads as %q, want %q", tc.words, got, tc.want)
		}
		again, err := mmlink.Parse(c.Words())
		if err != nil || !again.Equal(c) {
			t.Errorf("%q read back: %v, %v", c.Words(), again, err)
		}
	}
}
