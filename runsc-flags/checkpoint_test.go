package runscflags_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestRestoreHeldToPolicy restores checkpoints whose state, as the JSON a
// checkpoint's metadata holds, the sandbox wrote: the saved changes meet
// the annotation policy against the Config the NIC was built with (the
// restoring host's flags and the pod's annotations), so a change that
// tightens is applied and one that would loosen is refused, naming the
// flag and its ceiling, and leaving the NIC as built.
func TestRestoreHeldToPolicy(t *testing.T) {
	shaped := map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "10mbit", "qdisc-tbf-burst": "12500"}
	latency := map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "10mbit", "qdisc-tbf-burst": "12500", "qdisc-tbf-latency": "50ms"}
	classes := map[string]string{"qdisc": "htb", "qdisc-htb": liveHTB}
	for _, tc := range []struct {
		name  string
		flags map[string]string
		state string   // the checkpoint's NICState, as JSON
		says  []string // the refusal; nil: taken
		check func(t *testing.T, p liveParts)
	}{
		{
			name:  "a lower rate",
			flags: shaped,
			state: `{"args":["--qdisc-tbf-rate=625000"]}`,
			check: wantRate(625_000),
		},
		{
			name:  "a rate past the restoring host's flag",
			flags: shaped,
			state: `{"args":["--qdisc-tbf-rate=2500000"]}`,
			says:  []string{`--qdisc-tbf-rate="2500000"`, "ceiling --qdisc-tbf-rate=1250000", "may only tighten"},
		},
		{
			name:  "the ceiling removed",
			flags: shaped,
			state: `{"args":["--qdisc-tbf-rate=0","--qdisc-tbf-burst=0"]}`,
			says:  []string{"0 would unset --qdisc-tbf-", "may only tighten"},
		},
		{
			name:  "a looser qdisc",
			flags: shaped,
			state: `{"args":["--qdisc=fifo"]}`,
			says:  []string{"--qdisc cannot change on a running sandbox"},
		},
		{
			name:  "the operator's override switched on",
			flags: shaped,
			state: `{"args":["--allow-flag-override=true","--qdisc-tbf-rate=2500000"]}`,
			says:  []string{"--allow-flag-override cannot change on a running sandbox"},
		},
		{
			name:  "a longer latency",
			flags: latency,
			state: `{"args":["--qdisc-tbf-latency=1s"]}`,
			says:  []string{"--qdisc-tbf-latency", "ceiling --qdisc-tbf-latency=50ms"},
		},
		{
			name:  "a queue past the default one",
			flags: shaped,
			state: `{"args":["--qdisc-tbf-limit=100000000"]}`,
			says:  []string{"--qdisc-tbf-limit", "1000 full-size packets"},
		},
		{
			name:  "a shorter queue",
			flags: shaped,
			state: `{"args":["--qdisc-tbf-limit=100000"]}`,
			check: func(t *testing.T, p liveParts) {
				if got := p.q.(*tbf.Discipline).Config().Limit; got != 100_000 {
					t.Errorf("limit %d; want the checkpoint's 100000", got)
				}
			},
		},
		{
			name:  "an htb class raised",
			flags: classes,
			state: `{"args":["--qdisc-htb=class classid 1:20 rate 20mbit"]}`,
			says:  []string{"--qdisc-htb", "class 1:20: rate 20Mbit is above", "10Mbit"},
		},
		{
			name:  "an htb quota raised",
			flags: classes,
			state: `{"args":["--qdisc-htb=class classid 1:20 rate 10mbit quota 3000kb per 24h then block"]}`,
			says:  []string{"--qdisc-htb", "quota"},
		},
		{
			name:  "an htb quota reset",
			flags: classes,
			state: `{"args":["--qdisc-htb=reset classid 1:20"]}`,
			says:  []string{"reset", "renews its budget"},
		},
		{
			name:  "an htb class lowered",
			flags: classes,
			state: `{"args":["--qdisc-htb=class classid 1:20 rate 5mbit"]}`,
			check: func(t *testing.T, p liveParts) {
				if got := p.q.(*htb.Discipline).Classes()[2].Rate; got != 625_000 {
					t.Errorf("class 1:20's rate %d; want the checkpoint's 625000", got)
				}
			},
		},
		{
			name:  "quota counters reset",
			flags: classes,
			state: `{"egress":"` + encoded(t, []htb.QuotaState{{ID: 0x10020, Used: 0, Left: 1}}) + `"}`,
			// An unused budget with 1 ns left: what an idle sandbox's
			// honest checkpoint holds, no more than the class's budget.
			check: wantQuotaUsed(0),
		},
		{
			name:  "a quota count wrapped to the top",
			flags: classes,
			state: `{"egress_quotas":[{"ID":65568,"Used":18446744073709551615,"Left":60000000000}]}`,
			check: wantQuotaUsed(18446744073709551615),
		},
		{
			name:  "a negative quota count",
			flags: classes,
			state: `{"egress_quotas":[{"ID":65568,"Used":-1,"Left":60000000000}]}`,
			says:  []string{"cannot unmarshal"},
		},
		{
			name:  "a quota period that starts in the future",
			flags: classes,
			state: `{"egress":"` + encoded(t, []htb.QuotaState{{ID: 0x10020, Left: 48 * 3600e9}}) + `"}`,
			says:  []string{"htb", "left of a 24h0m0s period"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s runscflags.NICState
			err := json.Unmarshal([]byte(tc.state), &s)
			p := newLiveNIC(t, "eth0", 1500, tc.flags)
			before := p.NIC.Config()
			if err == nil {
				err = p.NIC.Restore(s)
			}
			if tc.says == nil {
				if err != nil {
					t.Fatalf("Restore(%s): %v", tc.state, err)
				}
				tc.check(t, p)
				return
			}
			if err == nil {
				t.Fatalf("Restore(%s) took it; want an error saying %q", tc.state, tc.says)
			}
			for _, w := range tc.says {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Restore(%s): %v; want it to say %q", tc.state, err, w)
				}
			}
			if after := p.NIC.Config(); after.String() != before.String() {
				t.Errorf("a refused checkpoint changed the NIC's Config from %q to %q", before, after)
			}
		})
	}
}

// TestRestoreCeilingIsThePods: the pod's annotations are part of the
// ceiling a checkpoint meets: a NIC built after the pod lowered the
// operator's rate refuses a checkpoint that gives the operator's rate
// back.
func TestRestoreCeilingIsThePods(t *testing.T) {
	cfg := configOf(t, map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "10mbit", "qdisc-tbf-burst": "12500"})
	if err := cfg.ApplyAnnotations(map[string]string{"dev.gvisor.flag.qdisc-tbf-rate": "5mbit"}); err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	for _, f := range runscflags.Flags {
		flags[f.Name] = cfg.Get(f.Name)
	}
	p := newLiveNIC(t, "eth0", 1500, flags)
	err := p.NIC.Restore(runscflags.NICState{Args: []string{"--qdisc-tbf-rate=1250000"}})
	if err == nil || !strings.Contains(err.Error(), "ceiling --qdisc-tbf-rate=625000") {
		t.Errorf("Restore of the operator's rate over the pod's: %v; want a refusal naming the pod's 625000", err)
	}
	if got := p.q.(*tbf.Discipline).Config().Rate; got != 625_000 {
		t.Errorf("rate %d after a refused restore; want the pod's 625000", got)
	}
}

// TestRestoreRoundTrip: an honest checkpoint of a NIC whose ceilings
// `runsc qdisc change` lowered and whose fq_codel knobs that bound nothing
// it set restores on a NIC built from the same flags, as JSON.
func TestRestoreRoundTrip(t *testing.T) {
	flags := map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "10mbit", "qdisc-tbf-burst": "12500", "qdisc-tbf-child": "fq_codel", "qdisc-ingress-rate": "20mbit", "qdisc-ingress-burst": "25000"}
	p := newLiveNIC(t, "eth0", 1500, flags)
	args := []string{"--qdisc-tbf-rate=5mbit", "--qdisc-ingress-rate=10mbit", "--qdisc-fq-codel-quantum=3000"}
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, args); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.NIC.State(true))
	if err != nil {
		t.Fatal(err)
	}
	var s runscflags.NICState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	again := newLiveNIC(t, "eth0", 1500, flags)
	if err := again.NIC.Restore(s); err != nil {
		t.Fatalf("Restore(%s): %v", b, err)
	}
	if got, want := again.NIC.Config().String(), p.NIC.Config().String(); got != want {
		t.Errorf("restored Config %q; want the checkpointed %q", got, want)
	}
	if got := again.q.(*tbf.Discipline).Config().Rate; got != 625_000 {
		t.Errorf("restored rate %d; want 625000", got)
	}
}

// wantRate checks the egress tbf's rate.
func wantRate(r uint64) func(*testing.T, liveParts) {
	return func(t *testing.T, p liveParts) {
		t.Helper()
		if got := p.q.(*tbf.Discipline).Config().Rate; got != r {
			t.Errorf("rate %d; want %d", got, r)
		}
	}
}

// wantQuotaUsed checks class 1:20's quota count, and that the class
// sends no more of its budget than is left.
func wantQuotaUsed(used uint64) func(*testing.T, liveParts) {
	return func(t *testing.T, p liveParts) {
		t.Helper()
		q := p.q.(*htb.Discipline)
		c := q.Classes()[2]
		if c.QuotaUsed != used {
			t.Errorf("class 1:20's quota used %d; want %d", c.QuotaUsed, used)
		}
		for i := range 5 {
			pkt := qdisctest.MakePacket(1000, 0, uint64(i))
			if err := q.WritePacket(pkt); err != nil {
				t.Fatal(err)
			}
			pkt.DecRef()
		}
		qdisctest.WaitQuiescent(t, q)
		most := 0
		if used < 3000 {
			most = int((3000 - used + 999) / 1000)
		}
		if n := len(p.link.Records()); n > most {
			t.Errorf("%d packets of 1000 bytes sent; want at most the %d the 3000-byte budget has left", n, most)
		}
	}
}

// encoded is htb's Save of states, as a NICState's JSON holds it (base64).
func encoded(t *testing.T, states []htb.QuotaState) string {
	t.Helper()
	b, err := json.Marshal(states)
	if err != nil {
		t.Fatal(err)
	}
	v, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(string(v), `"`)
}
