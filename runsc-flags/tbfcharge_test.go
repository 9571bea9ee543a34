package runscflags_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestTBFChargeWords: --qdisc-tbf takes every word tc-tbf takes, overhead,
// mpu and linklayer among them (held in --qdisc-tbf-overhead, -mpu and
// -linklayer), and the tbf the sandbox runs charges them: its Config has
// them, `tc qdisc show` prints them, and its rate table charges each
// packet its bytes plus the overhead, at least the mpu, as ATM cells with
// linklayer atm. Over a second of a full backlog of 100-byte packets at
// 53000 bytes/s, as many leave as that charge allows: 530 of 100 bytes,
// 427 of 124 (overhead 24), 333 of 159 (three 53-byte cells), 265 of 200
// (mpu 200), 200 of 265 (mpu 200 in five cells).
func TestTBFChargeWords(t *testing.T) {
	const rate = 53000 // bytes/s: 424kbit
	for _, tc := range []struct {
		words  string
		charge float64 // bytes a 100-byte packet is charged
		shows  string  // what tc qdisc show prints of it
		want   tbf.Config
	}{
		{words: "", charge: 100, shows: "tbf rate 424Kbit burst 3179b lat 19.7s"},
		{words: " overhead 24", charge: 124, shows: "overhead 24", want: tbf.Config{Overhead: 24}},
		{words: " overhead 24 linklayer atm", charge: 159, shows: "overhead 24 linklayer atm", want: tbf.Config{Overhead: 24, ATM: true}},
		{words: " overhead 24 mpu 200", charge: 200, shows: "overhead 24", want: tbf.Config{Overhead: 24, MPU: 200}},
		{words: " mpu 200 linklayer adsl", charge: 265, shows: "linklayer atm", want: tbf.Config{MPU: 200, ATM: true}},
	} {
		words := "rate 424kbit burst 3180 limit 1mb" + tc.words
		t.Run(words, func(t *testing.T) {
			c, err := parseArgs("--qdisc=tbf", "--qdisc-tbf="+words, "--qdisc-tbf-child=fifo")
			if err != nil {
				t.Fatal(err)
			}
			clock := faketime.NewManualClock()
			link := qdisctest.NewLink(clock)
			q, err := c.NewQueueingDiscipline(link, clock)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			got := q.(*tbf.Discipline).Config()
			if got.Overhead != tc.want.Overhead || got.MPU != tc.want.MPU || got.ATM != tc.want.ATM {
				t.Errorf("the tbf charges overhead %d, mpu %d, ATM %v; want %d, %d, %v", got.Overhead, got.MPU, got.ATM, tc.want.Overhead, tc.want.MPU, tc.want.ATM)
			}
			if s := q.(runscflags.QDisc).String(); !strings.Contains(s, tc.shows) {
				t.Errorf("tc qdisc show: %q; want it to say %q", s, tc.shows)
			}
			for i := range 1200 {
				pkt := qdisctest.MakePacket(100, 0, uint64(i))
				if err := q.WritePacket(pkt); err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				pkt.DecRef()
			}
			start := clock.NowMonotonic()
			sentBy := func(at time.Duration) int {
				for clock.NowMonotonic().Sub(start) < at {
					clock.Advance(5 * time.Millisecond)
					qdisctest.WaitQuiescent(t, q.(qdisctest.Quiescer))
				}
				n, _ := link.Count()
				return int(n)
			}
			from := sentBy(time.Second)
			n := sentBy(2*time.Second) - from
			if want := rate / tc.charge; math.Abs(float64(n)-want) > 5 {
				t.Errorf("%d packets left in a second of backlog; want %.0f, each charged %.0f bytes at %d bytes/s", n, want, tc.charge, rate)
			}
		})
	}
}

// TestTBFChargeAnnotations: what a tbf charges each packet may only be
// raised by a pod (Rule Raise): more overhead or mpu, linklayer atm over
// ethernet, each by its flag's annotation or a word of --qdisc-tbf's;
// less is refused naming the flag and the operator's value, unless the
// operator allows overrides. The flags give the same values back in
// Args, which parse back to the same Config.
func TestTBFChargeAnnotations(t *testing.T) {
	operator := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=32kb", "--qdisc-tbf-overhead=24", "--qdisc-tbf-mpu=64", "--qdisc-tbf-linklayer=atm"}
	for _, tc := range []struct {
		name        string
		override    bool
		annotations map[string]string
		says        string // for a refusal, what it says
		want        []string
	}{
		{name: "more overhead", annotations: map[string]string{"qdisc-tbf-overhead": "40"}, want: []string{"--qdisc-tbf-overhead=40"}},
		{name: "a larger mpu by words", annotations: map[string]string{"qdisc-tbf": "rate 5mbit burst 16k mpu 128 linklayer atm"}, want: []string{"--qdisc-tbf-mpu=128", "--qdisc-tbf-rate=625000"}},
		{name: "the same", annotations: map[string]string{"qdisc-tbf-linklayer": "adsl", "qdisc-tbf-overhead": "24"}, want: []string{"--qdisc-tbf-linklayer=atm", "--qdisc-tbf-overhead=24"}},
		{name: "less overhead", annotations: map[string]string{"qdisc-tbf-overhead": "0"}, says: "below the operator's --qdisc-tbf-overhead=24"},
		{name: "a smaller mpu by words", annotations: map[string]string{"qdisc-tbf": "rate 5mbit burst 16k mpu 32 linklayer atm"}, says: "--qdisc-tbf-mpu=32"},
		{name: "ethernet under atm", annotations: map[string]string{"qdisc-tbf-linklayer": "ethernet"}, says: "below the operator's --qdisc-tbf-linklayer=atm"},
		{name: "less overhead, allowed", override: true, annotations: map[string]string{"qdisc-tbf-overhead": "0", "qdisc-tbf-linklayer": "ethernet"}, want: []string{"--qdisc-tbf-mpu=64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := operator
			if tc.override {
				args = append(append([]string(nil), operator...), "--allow-flag-override")
			}
			c, err := parseArgs(args...)
			if err != nil {
				t.Fatal(err)
			}
			set := map[string]string{}
			for k, v := range tc.annotations {
				set[runscflags.AnnotationPrefix+k] = v
			}
			err = c.ApplyAnnotations(set)
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("ApplyAnnotations(%v): %v; want an error saying %q", tc.annotations, err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatalf("ApplyAnnotations(%v): %v", tc.annotations, err)
			}
			got := c.Args()
			for _, w := range tc.want {
				if !strings.Contains(strings.Join(got, " "), w) {
					t.Errorf("Args() = %q; want %s", got, w)
				}
			}
			again, err := parseArgs(got...)
			if err != nil || strings.Join(again.Args(), " ") != strings.Join(got, " ") {
				t.Errorf("Args %q parse back to %v, %v", got, again, err)
			}
		})
	}
}

// TestTBFChargeChange: `runsc qdisc change --qdisc-tbf=...` with overhead,
// mpu and linklayer changes them on the running tbf in place, as
// tbf_change takes them (the words are the tbf's whole: what they leave
// out goes), and a rate of 0 removes them with the ceiling.
func TestTBFChargeChange(t *testing.T) {
	p := liveNICOf(t, "--qdisc=tbf", "--qdisc-tbf=rate 10mbit burst 32k overhead 14")
	for _, step := range []struct {
		args []string
		want tbf.Config // what the tbf charges
	}{
		{[]string{"--qdisc-tbf=rate 10mbit burst 32k overhead 24 mpu 64 linklayer atm"}, tbf.Config{Overhead: 24, MPU: 64, ATM: true}},
		{[]string{"--qdisc-tbf-mpu=84"}, tbf.Config{Overhead: 24, MPU: 84, ATM: true}},
		{[]string{"--qdisc-tbf=rate 10mbit burst 32k"}, tbf.Config{}},
		{[]string{"--qdisc-tbf-overhead=38", "--qdisc-tbf-linklayer=atm"}, tbf.Config{Overhead: 38, ATM: true}},
		{[]string{"--qdisc-tbf-rate=0"}, tbf.Config{}},
	} {
		if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, step.args); err != nil {
			t.Fatalf("Change(%q): %v", step.args, err)
		}
		got := p.q.(*tbf.Discipline).Config()
		if got.Overhead != step.want.Overhead || got.MPU != step.want.MPU || got.ATM != step.want.ATM {
			t.Errorf("after %q the tbf charges overhead %d, mpu %d, ATM %v; want %d, %d, %v", step.args, got.Overhead, got.MPU, got.ATM, step.want.Overhead, step.want.MPU, step.want.ATM)
		}
	}
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{"--qdisc-tbf=rate 10mbit burst 32k overhead 65536"}); err == nil || !strings.Contains(err.Error(), "overhead") {
		t.Errorf("an overhead past 16 bits: %v; want it refused naming overhead", err)
	}
}
