package runscflags_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestCakeKnobFlags: each of cake's settings has a flag in tc-cake's
// words (--qdisc-cake-bandwidth=100mbit ...), read after --qdisc-cake's
// words so that a setting's flag overrides them, and the cake built is
// the one they describe; a value that is not the setting's is refused
// naming the flag and what it takes.
func TestCakeKnobFlags(t *testing.T) {
	server := map[string]string{"qdisc": "cake", "qdisc-cake-bandwidth": "100mbit", "qdisc-cake-isolation": "triple-isolate",
		"qdisc-cake-diffserv": "diffserv4", "qdisc-cake-ack-filter": "ack-filter", "qdisc-cake-rtt": "50ms",
		"qdisc-cake-overhead": "ethernet", "qdisc-cake-memlimit": "16mb", "qdisc-cake-wash": "true", "qdisc-cake-split-gso": "false"}
	serverCfg := cake.DefaultConfig()
	serverCfg.Bandwidth, serverCfg.Isolation, serverCfg.Diffserv, serverCfg.AckFilter = 12_500_000, cake.TripleIsolate, cake.Diffserv4, cake.AckFilterOn
	serverCfg.RTT, serverCfg.Target = 50*time.Millisecond, 2500*time.Microsecond
	serverCfg.Raw, serverCfg.Overhead, serverCfg.MPU, serverCfg.Memlimit, serverCfg.Wash, serverCfg.SplitGSO = false, 38, 84, 16<<20, true, false
	with := func(f func(*cake.Config)) cake.Config { c := cake.DefaultConfig(); f(&c); return c }
	for _, tc := range []struct {
		name  string
		flags map[string]string
		want  cake.Config
		err   []string
	}{
		{"every setting", server, serverCfg, nil},
		{"a bare bandwidth is bytes/s, as runsc's rates", map[string]string{"qdisc": "cake", "qdisc-cake-bandwidth": "1250000"},
			with(func(c *cake.Config) { c.Bandwidth = 1_250_000 }), nil},
		{"the setting's flag overrides --qdisc-cake", map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 100mbit dual-dsthost", "qdisc-cake-bandwidth": "20mbit"},
			with(func(c *cake.Config) { c.Bandwidth, c.Isolation = 2_500_000, cake.DualDstHost }), nil},
		{"unlimited over --qdisc-cake's bandwidth", map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 100mbit", "qdisc-cake-bandwidth": "unlimited"},
			cake.DefaultConfig(), nil},
		{"an rtt preset", map[string]string{"qdisc": "cake", "qdisc-cake-rtt": "lan"},
			with(func(c *cake.Config) { c.RTT, c.Target = time.Millisecond, 50*time.Microsecond }), nil},
		{"a bare overhead", map[string]string{"qdisc": "cake", "qdisc-cake-overhead": "-4"},
			with(func(c *cake.Config) { c.Raw, c.Overhead = false, -4 }), nil},
		{"framing words", map[string]string{"qdisc": "cake", "qdisc-cake-overhead": "overhead 18 mpu 64 noatm"},
			with(func(c *cake.Config) { c.Raw, c.Overhead, c.MPU = false, 18, 64 }), nil},
		{"split-gso's word", map[string]string{"qdisc": "cake", "qdisc-cake-split-gso": "no-split-gso"},
			with(func(c *cake.Config) { c.SplitGSO = false }), nil},
		{"without --qdisc=cake", map[string]string{"qdisc-cake-bandwidth": "10mbit"}, cake.Config{},
			[]string{"--qdisc-cake-bandwidth", "needs --qdisc=cake"}},
		{"a bad bandwidth", map[string]string{"qdisc": "cake", "qdisc-cake-bandwidth": "fast"}, cake.Config{},
			[]string{"--qdisc-cake-bandwidth", "unlimited"}},
		{"below cake's least rate", map[string]string{"qdisc": "cake", "qdisc-cake-bandwidth": "10"}, cake.Config{},
			[]string{"--qdisc-cake-bandwidth", "or more"}},
		{"an isolation tc does not know", map[string]string{"qdisc": "cake", "qdisc-cake-isolation": "dual-host"}, cake.Config{},
			[]string{"--qdisc-cake-isolation", "dual-dsthost"}},
		{"a diffserv tc does not know", map[string]string{"qdisc": "cake", "qdisc-cake-diffserv": "diffserv5"}, cake.Config{},
			[]string{"--qdisc-cake-diffserv", "diffserv4"}},
		{"an ack filter tc does not know", map[string]string{"qdisc": "cake", "qdisc-cake-ack-filter": "on"}, cake.Config{},
			[]string{"--qdisc-cake-ack-filter", "ack-filter-aggressive"}},
		{"a bad rtt", map[string]string{"qdisc": "cake", "qdisc-cake-rtt": "soon"}, cake.Config{},
			[]string{"--qdisc-cake-rtt"}},
		{"more than the framing", map[string]string{"qdisc": "cake", "qdisc-cake-overhead": "ethernet bandwidth 1gbit"}, cake.Config{},
			[]string{"--qdisc-cake-overhead", "sets more than the framing", "--qdisc-cake"}},
		{"two memlimits", map[string]string{"qdisc": "cake", "qdisc-cake-memlimit": "1mb 2mb"}, cake.Config{},
			[]string{"--qdisc-cake-memlimit", "one value"}},
		{"wash is a bool", map[string]string{"qdisc": "cake", "qdisc-cake-wash": "maybe"}, cake.Config{},
			[]string{"--qdisc-cake-wash", "true (wash) or false (nowash)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := fromMap(tc.flags)
			if tc.err != nil {
				errorSays(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.CakeConfig()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("CakeConfig: %v\nwant %v", got, tc.want)
			}
			p := newLiveNIC(t, "eth0", 1500, tc.flags)
			if got := p.q.(*cake.Discipline).Config(); got != tc.want {
				t.Errorf("the built cake: %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestCakeKnobAnnotations: dev.gvisor.flag.qdisc-cake-* annotations are
// held to the operator's cake as --qdisc-cake's are: a lower bandwidth
// passes, a higher one or unlimited is refused naming the annotation and
// the operator's bandwidth; the modes are the pod's. An annotation of
// --qdisc-cake's whole words is not undone by the operator's settings'
// flags.
func TestCakeKnobAnnotations(t *testing.T) {
	operator := map[string]string{"qdisc": "cake", "qdisc-cake-bandwidth": "100mbit", "qdisc-cake-memlimit": "8mb"}
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want func(cake.Config) bool
		says []string
	}{
		{"a lower bandwidth", map[string]string{"qdisc-cake-bandwidth": "50mbit"},
			func(c cake.Config) bool { return c.Bandwidth == 6_250_000 && c.Memlimit == 8<<20 }, nil},
		{"whole words over the operator's flags", map[string]string{"qdisc-cake": "bandwidth 40mbit dual-dsthost memlimit 4mb"},
			func(c cake.Config) bool {
				return c.Bandwidth == 5_000_000 && c.Isolation == cake.DualDstHost && c.Memlimit == 4<<20
			}, nil},
		{"whole words, then a setting", map[string]string{"qdisc-cake": "bandwidth 40mbit dual-dsthost", "qdisc-cake-bandwidth": "30mbit"},
			func(c cake.Config) bool { return c.Bandwidth == 3_750_000 && c.Isolation == cake.DualDstHost }, nil},
		{"the pod's modes", map[string]string{"qdisc-cake-diffserv": "besteffort", "qdisc-cake-isolation": "flows", "qdisc-cake-ack-filter": "ack-filter"},
			func(c cake.Config) bool {
				return c.Bandwidth == 12_500_000 && c.Diffserv == cake.BestEffort && c.Isolation == cake.Flows && c.AckFilter == cake.AckFilterOn
			}, nil},
		{"a higher bandwidth", map[string]string{"qdisc-cake-bandwidth": "200mbit"}, nil,
			[]string{"dev.gvisor.flag.qdisc-cake-bandwidth", "100Mbit", "--allow-flag-override"}},
		{"unlimited", map[string]string{"qdisc-cake-bandwidth": "unlimited"}, nil,
			[]string{"dev.gvisor.flag.qdisc-cake-bandwidth", "--allow-flag-override"}},
		{"a larger memlimit", map[string]string{"qdisc-cake-memlimit": "64mb"}, nil,
			[]string{"dev.gvisor.flag.qdisc-cake-memlimit", "--allow-flag-override"}},
		{"not a value", map[string]string{"qdisc-cake-isolation": "dual-host"}, nil,
			[]string{"dev.gvisor.flag.qdisc-cake-isolation", "dual-dsthost"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := fromMap(operator)
			if err != nil {
				t.Fatal(err)
			}
			ann := map[string]string{}
			for k, v := range tc.ann {
				ann[runscflags.AnnotationPrefix+k] = v
			}
			err = c.ApplyAnnotations(ann)
			if tc.want == nil {
				errorSays(t, err, tc.says)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.CakeConfig()
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(got) {
				t.Errorf("cake after the annotations: %v", got)
			}
		})
	}
}

// TestCakeKnobAnnotationsNeverLoosen: over random operators' and pods'
// settings, whatever ApplyAnnotations accepts is a cake the operator's
// would accept of a pod (cake.Config.Tighten, the rule's own oracle) and
// never shapes above the operator's bandwidth or unlimited under it.
func TestCakeKnobAnnotationsNeverLoosen(t *testing.T) {
	rng := rand.New(rand.NewSource(29))
	bandwidths := []string{"", "unlimited", "1mbit", "10mbit", "50mbit", "100mbit", "1gbit"}
	values := map[string][]string{
		runscflags.FlagCakeBandwidth: bandwidths,
		runscflags.FlagCakeMemlimit:  {"", "1mb", "4mb", "32mb"},
		runscflags.FlagCakeOverhead:  {"", "0", "18", "38", "-10", "ethernet", "docsis", "raw", "atm"},
		runscflags.FlagCakeRTT:       {"", "1ms", "100ms", "lan", "satellite"},
		runscflags.FlagCakeIsolation: {"", "flowblind", "dual-dsthost", "triple-isolate"},
		runscflags.FlagCakeWash:      {"", "true", "false"},
	}
	names := []string{runscflags.FlagCakeBandwidth, runscflags.FlagCakeMemlimit, runscflags.FlagCakeOverhead,
		runscflags.FlagCakeRTT, runscflags.FlagCakeIsolation, runscflags.FlagCakeWash}
	pick := func(name string) string { vs := values[name]; return vs[rng.Intn(len(vs))] }
	accepted := 0
	for i := 0; i < 2000; i++ {
		flags := map[string]string{"qdisc": "cake"}
		ann := map[string]string{}
		for _, n := range names {
			if v := pick(n); v != "" {
				flags[n] = v
			}
			if rng.Intn(2) == 0 {
				ann[runscflags.AnnotationPrefix+n] = pick(n)
			}
		}
		c, err := fromMap(flags)
		if err != nil {
			t.Fatalf("operator %v: %v", flags, err)
		}
		op, err := c.CakeConfig()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ApplyAnnotations(ann); err != nil {
			continue
		}
		accepted++
		got, err := c.CakeConfig()
		if err != nil {
			t.Fatalf("operator %v, annotations %v: accepted, but %v", flags, ann, err)
		}
		if _, err := op.Tighten(got); err != nil {
			t.Errorf("operator %v, annotations %v: accepted %v, which Tighten refuses: %v", flags, ann, got, err)
		}
		if op.Bandwidth != 0 && (got.Bandwidth == 0 || got.Bandwidth > op.Bandwidth) {
			t.Errorf("operator %v, annotations %v: bandwidth %d over the operator's %d", flags, ann, got.Bandwidth, op.Bandwidth)
		}
	}
	if accepted < 100 {
		t.Errorf("only %d of 2000 annotation sets accepted: the test checks little", accepted)
	}
}

// TestCakeKnobKubernetes: kubernetes.io/egress-bandwidth lowers the
// bandwidth --qdisc-cake-bandwidth gives, and keeps the other settings.
func TestCakeKnobKubernetes(t *testing.T) {
	for _, tc := range []struct {
		bw, kube string
		want     uint64
	}{
		{"100mbit", "10M", 1_250_000},
		{"100mbit", "1G", 12_500_000},
		{"unlimited", "10M", 1_250_000},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.bw, tc.kube), func(t *testing.T) {
			c, err := fromMap(map[string]string{"qdisc": "cake", "qdisc-cake-bandwidth": tc.bw, "qdisc-cake-isolation": "dual-dsthost"})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ApplyAnnotations(map[string]string{runscflags.AnnotationKubeEgress: tc.kube}); err != nil {
				t.Fatal(err)
			}
			got, err := c.CakeConfig()
			if err != nil {
				t.Fatal(err)
			}
			if got.Bandwidth != tc.want || got.Isolation != cake.DualDstHost {
				t.Errorf("cake after %s: %v; want bandwidth %d bytes/s, dual-dsthost kept", tc.kube, got, tc.want)
			}
		})
	}
}

// TestCakeKnobLive: `runsc qdisc change --qdisc-cake-bandwidth=50mbit`
// changes the running cake's bandwidth in place (tc qdisc change ... cake
// bandwidth 50mbit) and keeps the rest; --qdisc-cake's words given after
// the sandbox started with settings' flags are read over them; a
// checkpoint keeps the change; a bad value is refused naming the flag.
func TestCakeKnobLive(t *testing.T) {
	flags := map[string]string{"qdisc": "cake", "qdisc-cake-bandwidth": "100mbit", "qdisc-cake-isolation": "dual-dsthost"}
	p := newLiveNIC(t, "eth0", 1500, flags)
	q := p.q.(*cake.Discipline)
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{"--qdisc-cake-bandwidth=50mbit"}); err != nil {
		t.Fatal(err)
	}
	if c := q.Config(); c.Bandwidth != 6_250_000 || c.Isolation != cake.DualDstHost {
		t.Errorf("after --qdisc-cake-bandwidth=50mbit: %v; want 50mbit, dual-dsthost kept", c)
	}
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{"--qdisc-cake=bandwidth 20mbit diffserv4"}); err != nil {
		t.Fatal(err)
	}
	if c := q.Config(); c.Bandwidth != 2_500_000 || c.Isolation != cake.DualDstHost || c.Diffserv != cake.Diffserv4 {
		t.Errorf("after --qdisc-cake=bandwidth 20mbit diffserv4: %v; want 20mbit, diffserv4, dual-dsthost kept", c)
	}
	again := newLiveNIC(t, "eth0", 1500, flags)
	if err := again.Restore(p.State(true)); err != nil {
		t.Fatal(err)
	}
	if a, b := again.q.(*cake.Discipline).Config(), q.Config(); a != b {
		t.Errorf("restored: %v; want %v", a, b)
	}
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{"--qdisc-cake-bandwidth=fast"}); err == nil || !strings.Contains(err.Error(), "--qdisc-cake-bandwidth") {
		t.Errorf("a bad bandwidth: %v; want a refusal naming --qdisc-cake-bandwidth", err)
	}
	if c := q.Config(); c.Bandwidth != 2_500_000 {
		t.Errorf("a refused change changed cake: %v", c)
	}
}
