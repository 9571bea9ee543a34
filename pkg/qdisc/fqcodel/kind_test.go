package fqcodel_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestKindChanged: a change's words change only what they name, as
// Linux's fq_codel_change applies `tc qdisc change ... fq_codel WORDS`:
// every setting they do not name keeps the value in force (the flows
// too, which a running fq_codel cannot change), ecn and noecn each set
// ECN, a word given twice keeps the last, and words fq_codel does not
// take are refused naming the word.
func TestKindChanged(t *testing.T) {
	cur := fqcodel.Config{Limit: 500, Flows: 2048, Target: 10 * time.Millisecond, Interval: 200 * time.Millisecond, Quantum: 3000, NoECN: true, CEThreshold: time.Millisecond}
	for _, tc := range []struct {
		words string
		want  fqcodel.Config
		says  string // for a refusal, what it says
	}{
		{words: "limit 2000", want: func() fqcodel.Config { c := cur; c.Limit = 2000; return c }()},
		{words: "target 2ms interval 50ms", want: func() fqcodel.Config {
			c := cur
			c.Target, c.Interval = 2*time.Millisecond, 50*time.Millisecond
			return c
		}()},
		{words: "ecn", want: func() fqcodel.Config { c := cur; c.NoECN = false; return c }()},
		{words: "noecn limit 7 limit 9", want: func() fqcodel.Config { c := cur; c.Limit = 9; return c }()},
		{words: "fq_codel memory_limit 1mb drop_batch 8", want: func() fqcodel.Config {
			c := cur
			c.MemoryLimit, c.DropBatch = 1<<20, 8
			return c
		}()},
		{words: "", want: cur},
		{words: "flows 2048", want: cur},
		{words: "burst 10", says: `unknown word "burst"`},
		{words: "limit", says: `"limit" needs a value`},
		{words: "target 2s interval 1s", says: "target"},
	} {
		t.Run(tc.words, func(t *testing.T) {
			got, err := fqcodel.Kind.Changed(fqcodel.Options(cur), tc.words)
			if tc.says != "" {
				if err == nil || got != nil || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("Changed(%q) = %v, %v; want nil and an error saying %q", tc.words, got, err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatalf("Changed(%q): %v", tc.words, err)
			}
			if c := fqcodel.Config(got.(fqcodel.Options)); c != tc.want {
				t.Errorf("Changed(%q) =\n%s\nwant\n%s", tc.words, fields(c), fields(tc.want))
			}
		})
	}
}

// TestKindChangeRunning: on a running fq_codel started with 2048 flows,
// a change that names only its limit is taken, through the Kind as a
// runtime changes it (Changed, CheckChange, Change), and leaves the
// flows and every other setting as they were; one that names other
// flows is refused by CheckChange with a *ConfigError naming flows, and
// Change refuses it too, changing nothing.
func TestKindChangeRunning(t *testing.T) {
	clock := faketime.NewManualClock()
	start := fqcodel.Config{Flows: 2048, Target: 10 * time.Millisecond}
	q, err := fqcodel.Kind.New(qdisctest.NewLink(clock), clock, fqcodel.Options(start))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	before := q.(*fqcodel.Discipline).Config()
	o, err := fqcodel.Kind.Changed(fqcodel.Options(start), "limit 2000")
	if err != nil {
		t.Fatal(err)
	}
	if err := fqcodel.Kind.CheckChange(q, o); err != nil {
		t.Fatalf("CheckChange(limit 2000): %v", err)
	}
	if err := fqcodel.Kind.Change(q, o); err != nil {
		t.Fatalf("Change(limit 2000): %v", err)
	}
	want := before
	want.Limit = 2000
	if got := q.(*fqcodel.Discipline).Config(); got != want {
		t.Errorf("after limit 2000:\n%s\nwant\n%s", fields(got), fields(want))
	}

	o, err = fqcodel.Kind.Changed(fqcodel.Options(start), "flows 512")
	if err != nil {
		t.Fatal(err)
	}
	var ce *fqcodel.ConfigError
	if err := fqcodel.Kind.CheckChange(q, o); !errors.As(err, &ce) || ce.Field != "flows" {
		t.Errorf("CheckChange(flows 512) = %v; want a *ConfigError about flows", err)
	}
	if err := fqcodel.Kind.Change(q, o); err == nil {
		t.Error("Change(flows 512) was taken; want it refused")
	}
	if got := q.(*fqcodel.Discipline).Config(); got != want {
		t.Errorf("after the refused change:\n%s\nwant it unchanged,\n%s", fields(got), fields(want))
	}
	if kind, name, _ := ce.Setting(); kind != "fq_codel" || name != "flows" {
		t.Errorf("Setting() = %s %s; want fq_codel flows", kind, name)
	}
}

// TestKindQueueAndCeiling: fq_codel grafted as a child (Kind.Queue) is
// an fq_codel queue with the options given, its quantum the link's frame
// by default; a running fq_codel takes a tbf's buckets as its ceiling in
// place (Kind.Ceiling), which it then shows as the tbf it is grafted
// under, and loses it again with a nil gate.
func TestKindQueueAndCeiling(t *testing.T) {
	cq, err := fqcodel.Kind.Queue(fqcodel.Options{Limit: 100}, 1514)
	if err != nil {
		t.Fatal(err)
	}
	fq, ok := cq.(*fqcodel.Queue)
	if !ok {
		t.Fatalf("Queue = %T; want an *fqcodel.Queue", cq)
	}
	if c := fq.Config(); c.Limit != 100 || c.Quantum != 1514 {
		t.Errorf("the child's Config is %s; want limit 100 and quantum 1514", fields(c))
	}
	if _, err := fqcodel.Kind.Queue(fqcodel.Options{Flows: fqcodel.MaxFlows + 1}, 1514); err == nil {
		t.Error("Queue with too many flows was built; want an error")
	}

	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	q, err := fqcodel.Kind.New(link, clock, fqcodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	gate, maxSize, err := tbf.NewGate(link, tbf.Config{Rate: 125000, Burst: 10000}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := fqcodel.Kind.Ceiling(q, gate, maxSize); err != nil {
		t.Fatal(err)
	}
	if s := q.Show(); s.Kind != "tbf" || len(s.Children) != 1 || s.Children[0].Kind != "fq_codel" {
		t.Errorf("with a ceiling, Show() = %+v; want fq_codel under a tbf", s)
	}
	if err := fqcodel.Kind.Ceiling(q, nil, 0); err != nil {
		t.Fatal(err)
	}
	if s := q.Show(); s.Kind != "fq_codel" {
		t.Errorf("with the ceiling lifted, Show() = %+v; want fq_codel at the root", s)
	}
	var _ qdisc.SettingError = (*fqcodel.ConfigError)(nil)
}
