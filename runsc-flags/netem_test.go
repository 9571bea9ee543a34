package runscflags_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// fromArgs returns the Config runsc's flags args give, as runsc reads
// them (every registered kind's words among them).
func fromArgs(args ...string) (*runscflags.Config, error) {
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a refused value's error is returned
	runscflags.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return runscflags.NewFromFlags(fs)
}

// netemNIC is a NIC built from runsc's flags args, on a manual clock.
func netemNIC(t *testing.T, args ...string) *runscflags.NIC {
	t.Helper()
	c, err := fromArgs(args...)
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	q, err := c.NewQueueingDiscipline(link, clock)
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.NewIngress(link, clock)
	if err != nil {
		q.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close(); in.Close() })
	return runscflags.NewNIC("eth0", c, link, clock, q, in)
}

// TestNetemLive: netem, a registered kind, on both paths from its flags,
// shown as tc shows it and changed in place as `runsc qdisc change` does
// (netem_change: the words given replace the delay and loss; the seed
// stays), corrupt among them, and a bad word refused as the flag is read.
func TestNetemLive(t *testing.T) {
	n := netemNIC(t, "--qdisc=netem", "--qdisc-netem=delay 100ms 10ms loss 1% seed 5",
		"--qdisc-ingress=netem", "--qdisc-ingress-netem=delay 20ms seed 6")
	show := n.Show()
	for _, want := range []string{
		"qdisc netem 8001: dev eth0 root refcnt 2 limit 1000 delay 100ms  10ms loss 1% seed 5\n",
		"qdisc netem 8002: dev eth0 parent ffff: limit 1000 delay 20ms seed 6\n",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("Show():\n%s\nwant %q", show, want)
		}
	}
	if _, err := runscflags.Change([]*runscflags.NIC{n}, []string{"--qdisc-netem=loss 10%"}); err != nil {
		t.Fatal(err)
	}
	if show := n.Show(); !strings.Contains(show, "root refcnt 2 limit 1000 loss 10% seed 5\n") {
		t.Errorf("Show() after the change:\n%s\nwant netem_change's: loss 10%%, no delay, the seed kept", show)
	}
	if _, err := runscflags.Change([]*runscflags.NIC{n}, []string{"--qdisc-netem=corrupt 1% 25%"}); err != nil {
		t.Fatal(err)
	}
	if show := n.Show(); !strings.Contains(show, "root refcnt 2 limit 1000 corrupt 1% 25% seed 5\n") {
		t.Errorf("Show() after a change to corrupt:\n%s\nwant corrupt 1%% 25%%", show)
	}
	if _, err := fromArgs("--qdisc=netem", "--qdisc-netem=corrupt 101%"); err == nil || !strings.Contains(err.Error(), "percentage from 0 to 100") {
		t.Errorf("--qdisc-netem=\"corrupt 101%%\": %v; want the flag refused at once, saying why", err)
	}
	if _, err := fromArgs("--qdisc=netem", "--qdisc-netem=delay 10ms gap 3"); err == nil || !strings.Contains(err.Error(), "without reorder") {
		t.Errorf("gap without reorder: %v; want tc's refusal", err)
	}
}

// TestNetemAnnotations: a pod's dev.gvisor.flag.qdisc-netem over the
// operator's netem is netem's Tighten: more delay is taken (the operator's
// loss kept), and corruption added; less loss or corruption is refused
// naming the operator's, and netem where
// the operator runs another qdisc is refused.
func TestNetemAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name, operator, pod string
		want, says          string
	}{
		{"more delay", "delay 50ms loss 1%", "delay 100ms", "delay 100000000ns loss random 1%", ""},
		{"less loss", "delay 50ms loss 1%", "loss 0.1%", "", "below the operator's 1%"},
		{"corruption added", "delay 50ms loss 1%", "corrupt 1%", "delay 50000000ns loss random 1% corrupt 1% 0%", ""},
		{"less corruption", "delay 50ms corrupt 2%", "corrupt 1%", "", "below the operator's 2%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := fromArgs("--qdisc=netem", "--qdisc-netem="+tc.operator)
			if err != nil {
				t.Fatal(err)
			}
			err = c.ApplyAnnotations(map[string]string{runscflags.AnnotationPrefix + "qdisc-netem": tc.pod})
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%v, want a refusal saying %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Words["qdisc-netem"]; got != tc.want {
				t.Errorf("--qdisc-netem in force %q, want %q", got, tc.want)
			}
		})
	}
	c, err := fromArgs("--qdisc=fifo")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyAnnotations(map[string]string{runscflags.AnnotationPrefix + "qdisc-netem": "delay 100ms"}); err == nil || !strings.Contains(err.Error(), "does not run netem") {
		t.Errorf("netem's words over the operator's fifo: %v; want a refusal", err)
	}
}
