package runscflags

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

func TestFQCoDelFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want Config
		says []string // an error that says these
	}{
		{"alone, defaults", []string{"--qdisc=fq_codel"}, Config{QDisc: "fq_codel"}, nil},
		{"alone, every knob", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-limit=1000", "--qdisc-fq-codel-flows=256", "--qdisc-fq-codel-target=2ms", "--qdisc-fq-codel-interval=50ms",
			"--qdisc-fq-codel-quantum=300", "--qdisc-fq-codel-memory-limit=4mb", "--qdisc-fq-codel-drop-batch=16", "--qdisc-fq-codel-ecn=false"},
			Config{QDisc: "fq_codel", FQLimit: 1000, FQFlows: 256, FQTarget: 2 * time.Millisecond, FQInterval: 50 * time.Millisecond, FQQuantum: 300, FQMemoryLimit: 4 << 20, FQDropBatch: 16, FQNoECN: true}, nil},
		{"as the tbf's child", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-child=fq_codel"},
			Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, TBFChild: ChildFQCoDel}, nil},
		{"child with a tbf latency", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-child=fq_codel", "--qdisc-tbf-latency=50ms"}, Config{},
			[]string{"--qdisc-tbf-child=fq_codel", "--qdisc-tbf-latency"}},
		{"unknown child", []string{"--qdisc-tbf-child=sfq"}, Config{}, []string{"qdisc-tbf-child", "fifo, fq, fq_codel or netem"}},
		{"target above interval", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-target=200ms"}, Config{}, []string{"--qdisc-fq-codel-target", "above interval"}},
		{"too many flows", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-flows=100000"}, Config{}, []string{"--qdisc-fq-codel-flows"}},
		{"limit not a count", []string{"--qdisc-fq-codel-limit=10k"}, Config{}, []string{"qdisc-fq-codel-limit"}},
		// fqcodel.Config.Check's bounds, and what it holds in 32 bits.
		{"quantum 1 MiB", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-quantum=1mb"}, Config{QDisc: "fq_codel", FQQuantum: 1 << 20}, nil},
		{"quantum 2^31", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-quantum=2147483648"}, Config{}, []string{"--qdisc-fq-codel-quantum: ", "1048576", "FQ_CODEL_QUANTUM_MAX"}},
		{"quantum 1 MiB + 1", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-quantum=1048577"}, Config{}, []string{"--qdisc-fq-codel-quantum: ", "1048576"}},
		{"quantum past 32 bits", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-quantum=4294967296"}, Config{}, []string{"--qdisc-fq-codel-quantum=4294967296", "at most 1048576"}},
		{"quantum under tbf", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-child=fq_codel", "--qdisc-fq-codel-quantum=2147483648"}, Config{}, []string{"--qdisc-fq-codel-quantum: ", "1048576"}},
		{"quantum set while fifo", []string{"--qdisc-fq-codel-quantum=2gb"}, Config{}, []string{"--qdisc-fq-codel-quantum: ", "1048576"}},
		{"flows 65537", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-flows=65537"}, Config{}, []string{"--qdisc-fq-codel-flows: ", "65536"}},
		{"interval past CoDel's clock", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-interval=40m"}, Config{}, []string{"--qdisc-fq-codel-interval: ", fqcodel.MaxInterval.String()}},
		{"target past CoDel's clock", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-target=37m", "--qdisc-fq-codel-interval=38m"}, Config{}, []string{"--qdisc-fq-codel-target: ", fqcodel.MaxInterval.String()}},
		{"negative interval", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-interval=-1ms"}, Config{}, []string{"--qdisc-fq-codel-interval: ", "negative"}},
		{"memory limit past 2 GiB", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-memory-limit=3gb"}, Config{}, []string{"--qdisc-fq-codel-memory-limit=", "2 GiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.args...)
			if tc.says != nil {
				if err == nil {
					t.Fatalf("parsed %+v; want an error", *c)
				}
				for _, s := range tc.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *c, ignoreOperator); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			back, err := parse(t, c.Args()...)
			if err != nil || !cmp.Equal(c, back, ignoreOperator) {
				t.Errorf("Args %q parse back as %+v, %v", c.Args(), back, err)
			}
		})
	}
}

// TestFQCoDelAnnotations: fq_codel may replace fifo or none, never tbf;
// it may be added as the tbf's child where the tbf has no byte bound that
// fq_codel's would loosen; its queue bounds may only go down (the
// operator's value or Linux's default is the ceiling); the knobs that
// bound nothing are the operator's.
func TestFQCoDelAnnotations(t *testing.T) {
	tbfOp := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}
	for _, tc := range []struct {
		name     string
		operator []string
		set      map[string]string
		check    func(*Config) bool
		says     []string
	}{
		{"fq_codel over fifo", nil, a("qdisc", "fq_codel"), func(c *Config) bool { return c.QDisc == "fq_codel" }, nil},
		{"fq_codel over none", []string{"--qdisc=none"}, a("qdisc", "fq_codel"), func(c *Config) bool { return c.QDisc == "fq_codel" }, nil},
		{"fq_codel over tbf", tbfOp, a("qdisc", "fq_codel"), nil, []string{"dev.gvisor.flag.qdisc", "fq_codel", "--allow-flag-override"}},
		{"fq_codel as the tbf's child", tbfOp, a("qdisc-tbf-child", "fq_codel"), func(c *Config) bool { return c.TBFChild == ChildFQCoDel }, nil},
		{"child where the tbf has a latency bound", append(tbfOp, "--qdisc-tbf-latency=50ms"), a("qdisc-tbf-child", "fq_codel"), nil, []string{"qdisc-tbf-latency"}},
		{"back to fifo under the operator's fq_codel child", append(tbfOp, "--qdisc-tbf-child=fq_codel"), a("qdisc-tbf-child", "fifo"), nil, []string{"--allow-flag-override"}},
		{"a shorter target", []string{"--qdisc=fq_codel"}, a("qdisc-fq-codel-target", "1ms"), func(c *Config) bool { return c.FQTarget == time.Millisecond }, nil},
		{"a longer target than Linux's default", []string{"--qdisc=fq_codel"}, a("qdisc-fq-codel-target", "50ms"), nil, []string{"qdisc-fq-codel-target=5ms"}},
		{"a lower limit", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-limit=1000"}, a("qdisc-fq-codel-limit", "100"), func(c *Config) bool { return c.FQLimit == 100 }, nil},
		{"a higher limit", []string{"--qdisc=fq_codel", "--qdisc-fq-codel-limit=1000"}, a("qdisc-fq-codel-limit", "2000"), nil, []string{"qdisc-fq-codel-limit=1000"}},
		{"a zero limit", []string{"--qdisc=fq_codel"}, a("qdisc-fq-codel-limit", "0"), nil, []string{"non-zero"}},
		{"flows are the operator's", []string{"--qdisc=fq_codel"}, a("qdisc-fq-codel-flows", "16"), nil, []string{"bounds nothing", "--allow-flag-override"}},
		{"ecn is the operator's", []string{"--qdisc=fq_codel"}, a("qdisc-fq-codel-ecn", "false"), nil, []string{"bounds nothing"}},
		{"flows with override", []string{"--qdisc=fq_codel", "--allow-flag-override"}, a("qdisc-fq-codel-flows", "16"), func(c *Config) bool { return c.FQFlows == 16 }, nil},
		// fqcodel.Config.Check's bounds hold with override too.
		{"quantum 2^31 with override", []string{"--qdisc=fq_codel", "--allow-flag-override"}, a("qdisc-fq-codel-quantum", "2147483648"), nil,
			[]string{"invalid configuration", "--qdisc-fq-codel-quantum: ", "1048576"}},
		{"quantum past 32 bits with override", []string{"--qdisc=fq_codel", "--allow-flag-override"}, a("qdisc-fq-codel-quantum", "4294967296"), nil,
			[]string{"invalid configuration", "--qdisc-fq-codel-quantum=4294967296", "at most 1048576"}},
		{"quantum 1 MiB with override", []string{"--qdisc=fq_codel", "--allow-flag-override"}, a("qdisc-fq-codel-quantum", "1048576"), func(c *Config) bool { return c.FQQuantum == 1<<20 }, nil},
		{"flows 65537 with override", []string{"--qdisc=fq_codel", "--allow-flag-override"}, a("qdisc-fq-codel-flows", "65537"), nil,
			[]string{"invalid configuration", "--qdisc-fq-codel-flows: ", "65536"}},
		{"interval past CoDel's clock with override", []string{"--qdisc=fq_codel", "--allow-flag-override"}, a("qdisc-fq-codel-interval", "40m"), nil,
			[]string{"invalid configuration", "--qdisc-fq-codel-interval: ", fqcodel.MaxInterval.String()}},
		{"memory limit past 2 GiB with override", []string{"--qdisc=fq_codel", "--allow-flag-override"}, a("qdisc-fq-codel-memory-limit", "3gb"), nil,
			[]string{"invalid configuration", "--qdisc-fq-codel-memory-limit=", "2 GiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := annotate(t, tc.operator, tc.set, tc.says)
			if c == nil {
				return
			}
			if !tc.check(c) {
				t.Errorf("config %+v", *c)
			}
		})
	}
}

func TestNewFQCoDel(t *testing.T) {
	clock := faketime.NewManualClock()
	c, _ := parse(t, "--qdisc=fq_codel", "--qdisc-fq-codel-target=2ms", "--qdisc-fq-codel-interval=40ms")
	q, err := c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if got := q.(*fqcodel.Discipline).String(); !strings.Contains(got, "fq_codel limit 10240p flows 1024 quantum 1514 target 2ms interval 40ms") {
		t.Errorf("fq_codel described as %q", got)
	}
	c, _ = parse(t, "--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-child=fq_codel")
	q, err = c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	d := q.(*tbf.Discipline)
	if got, want := d.String(), "tbf rate 10Mbit burst 12500b; child fq_codel limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"; got != want || d.Lanes() != 1 {
		t.Errorf("%q with %d queues, want %q with 1", got, d.Lanes(), want)
	}
	if _, ok := fqcodel.ChildXStats(d); !ok {
		t.Errorf("no child statistics")
	}
}

func TestFQCoDelWarnings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=128kb", "--qdisc-tbf-child=fq_codel"}, true},                                 // 5.2 ms > 5 ms
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=128kb", "--qdisc-tbf-child=fq_codel", "--qdisc-fq-codel-target=8ms"}, false}, // 5.2 ms < 8 ms
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=1gbit", "--qdisc-tbf-burst=1mb", "--qdisc-tbf-child=fq_codel"}, false},                                    // 0.5 ms
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=128kb"}, false},                                                              // no child
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=16kb", "--qdisc-tbf-child=fq_codel"}, false},                                 // GSO packets cut to 16 KiB: 1.3 ms
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-child=fq_codel"}, true},                                  // 12500 B: 10 ms
	} {
		c, err := parse(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		w := strings.Join(c.Warnings(), "\n")
		if got := strings.Contains(w, "--qdisc-fq-codel-target"); got != tc.warn {
			t.Errorf("%q: warnings %q; want a target warning: %v", tc.args, w, tc.warn)
		}
		if tc.warn && !strings.Contains(w, "--gso=false") {
			t.Errorf("%q: the warning %q does not say what to change", tc.args, w)
		}
	}
}
