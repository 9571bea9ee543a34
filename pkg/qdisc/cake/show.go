package cake

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// TCLine writes c as `tc qdisc show` prints cake (iproute2's
// cake_print_opt, from what cake_dump reports), field for field:
//
//	bandwidth 100Mbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0
//
// Unlike String, whose words ParseQdisc reads back exactly, it rounds as
// tc does: the rate with sprint_rate (1234567bit is 1234Kbit), rtt with
// sprint_time (three digits), memlimit with sprint_size; and it leaves
// out a Target other than rtt/20, which cake_dump does not report.
func (c Config) TCLine() string {
	var b strings.Builder
	if c.Bandwidth == 0 {
		b.WriteString("bandwidth unlimited ")
	} else {
		fmt.Fprintf(&b, "bandwidth %s ", rate.FormatRate(c.Bandwidth))
	}
	if c.Autorate {
		b.WriteString("autorate-ingress ")
	}
	fmt.Fprintf(&b, "%s %s ", c.Diffserv, c.Isolation)
	b.WriteString(pick(c.NAT, "nat ", "nonat "))
	b.WriteString(pick(c.Wash, "wash ", "nowash "))
	if c.Ingress {
		b.WriteString("ingress ")
	}
	fmt.Fprintf(&b, "%s ", c.AckFilter)
	b.WriteString(pick(c.SplitGSO, "split-gso ", "no-split-gso "))
	if us := c.RTT.Microseconds(); us != 0 {
		fmt.Fprintf(&b, "rtt %s ", rate.FormatTCTime(float64(us)))
	}
	if c.Raw {
		b.WriteString("raw ")
	}
	if c.ATM != NoATM || !c.Raw {
		fmt.Fprintf(&b, "%s ", c.ATM)
	}
	fmt.Fprintf(&b, "overhead %d", c.Overhead)
	if c.MPU != 0 {
		fmt.Fprintf(&b, " mpu %d", c.MPU)
	}
	if c.Memlimit != 0 {
		fmt.Fprintf(&b, " memlimit %s", rate.FormatSize(uint64(c.Memlimit)))
	}
	if c.FwMark != 0 {
		fmt.Fprintf(&b, " fwmark 0x%x", c.FwMark)
	}
	return b.String()
}

// pick is yes if on, else no.
func pick(on bool, yes, no string) string {
	if on {
		return yes
	}
	return no
}
