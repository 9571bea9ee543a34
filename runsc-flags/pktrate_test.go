package runscflags

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestPacketRateFlags: the packet-rate flags' units, and errors that name
// the flag and say what to write.
func TestPacketRateFlags(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  uint64
		err   string
	}{
		{"20000", 20000, ""},
		{"20000pps", 20000, ""},
		{"20kpps", 20000, ""},
		{"20K", 20000, ""},
		{"1.5mpps", 1_500_000, ""},
		{"1gpps", 1_000_000_000, ""},
		{"0", 0, ""},
		{"2.5pps", 0, "whole packets per second"},
		{"-1", 0, "whole packets per second"},
		{"fast", 0, "whole packets per second"},
		{"pps", 0, "whole packets per second"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			for _, name := range []string{FlagTBFPacketRate, FlagIngressPacketRate} {
				c := defaults()
				err := c.Set(name, tc.value)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--"+name) {
						t.Errorf("--%s=%s: %v; want an error naming the flag and saying %q", name, tc.value, err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("--%s=%s: %v", name, tc.value, err)
				}
				if got := lookup(name).number(c); got != tc.want {
					t.Errorf("--%s=%s: %d, want %d", name, tc.value, got, tc.want)
				}
			}
		})
	}
}

// TestPacketRateValidate: a packet rate needs its burst, may be a tbf's
// only ceiling, and is bounded; the tbf's and ingress's Configs carry it.
func TestPacketRateValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		err  string // "" for valid
	}{
		{"packet-only tbf", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=20kpps", "--qdisc-tbf-pkt-burst=32"}, ""},
		{"bytes and packets", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32"}, ""},
		{"tbf with neither", []string{"--qdisc=tbf"}, "--qdisc-tbf-pkt-rate"},
		{"rate without burst", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=20000"}, "--qdisc-tbf-pkt-burst"},
		{"burst without rate", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-pkt-burst=32"}, "--qdisc-tbf-pkt-burst"},
		{"above 1 packet a ns", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=2gpps", "--qdisc-tbf-pkt-burst=32"}, "--qdisc-tbf-pkt-rate"},
		{"packet-only with a byte burst", []string{"--qdisc=tbf", "--qdisc-tbf-burst=12500", "--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32"}, "--qdisc-tbf-burst"},
		{"packet-only with latency", []string{"--qdisc=tbf", "--qdisc-tbf-latency=50ms", "--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32"}, "--qdisc-tbf-latency"},
		{"ingress packet-only", []string{"--qdisc-ingress-pkt-rate=20000", "--qdisc-ingress-pkt-burst=32"}, ""},
		{"ingress burst alone", []string{"--qdisc-ingress-pkt-burst=32"}, "--qdisc-ingress-pkt-rate"},
		{"ingress rate without burst", []string{"--qdisc-ingress-pkt-rate=20000"}, "--qdisc-ingress-pkt-burst"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.args...)
			if err == nil {
				err = c.Validate()
			}
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v; want an error naming %s", tc.args, err, tc.err)
			}
		})
	}
	c, err := parse(t, "--qdisc=tbf", "--qdisc-tbf-pkt-rate=20kpps", "--qdisc-tbf-pkt-burst=32", "--qdisc-ingress-pkt-rate=1000", "--qdisc-ingress-pkt-burst=4")
	if err != nil {
		t.Fatal(err)
	}
	if e, i := c.TBFConfig(), c.IngressConfig(); e.PacketRate != 20000 || e.PacketBurst != 32 || e.Rate != 0 || i.PacketRate != 1000 || i.PacketBurst != 4 {
		t.Errorf("TBFConfig %+v, IngressConfig %+v; want the packet buckets 20000/32 and 1000/4", e, i)
	}
}

// TestPacketRatePolicy: an annotation may add a packet ceiling where the
// operator has none, or lower the operator's; it may not raise or remove
// one without --allow-flag-override.
func TestPacketRatePolicy(t *testing.T) {
	const ann = "dev.gvisor.flag."
	for _, tc := range []struct {
		name        string
		operator    []string
		annotations map[string]string
		want        uint64 // the tbf's packet rate after
		err         string
	}{
		{"added where none", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"},
			map[string]string{ann + FlagTBFPacketRate: "5000", ann + FlagTBFPacketBurst: "8"}, 5000, ""},
		{"lowered", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32"},
			map[string]string{ann + FlagTBFPacketRate: "10kpps"}, 10000, ""},
		{"raised", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32"},
			map[string]string{ann + FlagTBFPacketRate: "30000"}, 0, "--allow-flag-override"},
		{"removed", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32"},
			map[string]string{ann + FlagTBFPacketRate: "0"}, 0, "--allow-flag-override"},
		{"burst raised", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32"},
			map[string]string{ann + FlagTBFPacketBurst: "64"}, 0, "--allow-flag-override"},
		{"raised with override", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32", "--allow-flag-override"},
			map[string]string{ann + FlagTBFPacketRate: "30000"}, 30000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.operator...)
			if err != nil {
				t.Fatal(err)
			}
			err = c.ApplyAnnotations(tc.annotations)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ApplyAnnotations(%v): %v; want an error naming %s", tc.annotations, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.TBFPacketRate != tc.want {
				t.Errorf("packet rate %d after %v, want %d", c.TBFPacketRate, tc.annotations, tc.want)
			}
		})
	}
	// The ingress flags follow the same rule.
	c, err := parse(t, "--qdisc-ingress-pkt-rate=20000", "--qdisc-ingress-pkt-burst=32")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyAnnotations(map[string]string{ann + FlagIngressPacketRate: "40000"}); err == nil || !strings.Contains(err.Error(), "--allow-flag-override") {
		t.Errorf("raising the ingress packet rate: %v; want a refusal", err)
	}
}

// TestPacketRateFactory: the qdisc and the ingress shaper the factory
// builds carry the packet bucket, also as their only ceiling.
func TestPacketRateFactory(t *testing.T) {
	clock := faketime.NewManualClock()
	c, err := parse(t, "--qdisc=tbf", "--qdisc-tbf-pkt-rate=20kpps", "--qdisc-tbf-pkt-burst=32", "--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500", "--qdisc-ingress-pkt-rate=1000", "--qdisc-ingress-pkt-burst=4")
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if got, want := q.(QDisc).String(), "tbf pkt_rate 20000pps pkt_burst 32pkt"; !strings.HasPrefix(got, want) {
		t.Errorf("qdisc %q, want it to start %q", got, want)
	}
	in, err := c.NewIngress(qdisctest.NewLink(clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if got, want := in.String(), "tbf rate 10Mbit burst 12500b pkt_rate 1000pps pkt_burst 4pkt"; !strings.HasPrefix(got, want) {
		t.Errorf("ingress %q, want it to start %q", got, want)
	}
}
