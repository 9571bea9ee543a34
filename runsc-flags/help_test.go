package runscflags

import (
	"flag"
	"strings"
	"testing"
)

// TestHelpNamesDurations: `runsc flags` (flag.PrintDefaults) shows a
// duration flag's argument as "duration", as fs.Duration would, and the
// others as "value", as runsc's own custom flags show.
func TestHelpNamesDurations(t *testing.T) {
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	RegisterFlags(fs)
	var out strings.Builder
	fs.SetOutput(&out)
	fs.PrintDefaults()
	for _, want := range []string{
		"-qdisc-tbf-latency duration\n    \ttbf: most time a packet may wait",
		"-qdisc-fq-codel-target duration",
		"-qdisc-tbf-rate value\n",
		"-qdisc value\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help does not say %q:\n%s", want, out.String())
		}
	}
}
