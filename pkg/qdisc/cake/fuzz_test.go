package cake_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// FuzzParseCake reads its input as tc-cake's words and checks what a user
// of ParseQdisc relies on:
//   - no input panics;
//   - an error starts with cake;
//   - what parses is valid (Validate);
//   - its String parses back to the same Config;
//   - the operator's own configuration always tightens itself.
func FuzzParseCake(f *testing.F) {
	for _, s := range []string{
		"",
		"bandwidth 100mbit ethernet",
		"bandwidth 100Mbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 38 mpu 84",
		"bandwidth unlimited autorate-ingress diffserv8 dual-dsthost wash ingress ack-filter-aggressive no-split-gso rtt 1.5ms target 100us raw atm overhead -10 mpu 64 memlimit 5Mb",
		"overhead 200 ethernet ether-vlan ether-vlan pppoe-ptm conservative raw docsis",
		"interplanetary rtt 4294967295us target 1 fwmark 0x0",
		"nat fwmark 7 rtt 1.5us bandwidth 511bit memlimit 65535",
		"lan metro help",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := cake.ParseQdisc(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cake") {
				t.Errorf("ParseQdisc(%q) = %v, an error that does not start with cake", s, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseQdisc(%q) = %+v, which Validate refuses: %v", s, c, err)
		}
		back, err := cake.ParseQdisc(c.String())
		if err != nil {
			t.Fatalf("ParseQdisc(%q) = %+v, whose String %q does not parse: %v", s, c, c.String(), err)
		}
		if diff := cmp.Diff(c, back); diff != "" {
			t.Fatalf("ParseQdisc(%q).String() = %q reads back different (-want +got):\n%s", s, c.String(), diff)
		}
		if _, err := c.Tighten(c); err != nil {
			t.Fatalf("%q does not tighten itself: %v", c, err)
		}
	})
}
