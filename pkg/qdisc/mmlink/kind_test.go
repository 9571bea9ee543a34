package mmlink_test

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestKind: mmlink is registered as a kind; its example's words read
// back to themselves; a pod may not change it (Tighten nil); what the
// runtime builds through the kind, on either path, sends at the trace's
// times, changes in place, and shows as `tc -s qdisc show` does.
func TestKind(t *testing.T) {
	k, ok := qdisc.Lookup("mmlink")
	if !ok {
		t.Fatal("mmlink is not registered")
	}
	if k.Usage == "" || k.Tighten != nil || k.Change == nil || k.Fit != nil {
		t.Errorf("kind %+v: want a usage, a Change, and no Tighten or Fit", k)
	}
	o, err := k.Parse(k.Example)
	if err != nil {
		t.Fatalf("the example %q: %v", k.Example, err)
	}
	again, err := k.Parse(o.String())
	if err != nil || again.String() != o.String() {
		t.Errorf("%q read back as %v, %v", o.String(), again, err)
	}
	if _, err := k.Parse(""); err == nil || !strings.Contains(err.Error(), "give trace FILE") {
		t.Errorf("no words: error %v, want one that asks for a trace", err)
	}
	one, err := k.Parse("trace " + writeTrace(t, "1\n") + " limit 10")
	if err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"send", "receive"} {
		t.Run(path, func(t *testing.T) {
			clock := faketime.NewManualClock()
			link := qdisctest.NewLink(clock)
			var d qdisc.Discipline
			if path == "send" {
				d, err = k.New(link, clock, one)
			} else {
				d, err = k.NewTo(link, link, clock, one)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for i := range 3 {
				p := qdisctest.MakePacket(1500, 1, uint64(i))
				if err := d.Enqueue(p, 0); err != nil {
					t.Fatal(err)
				}
				p.DecRef()
			}
			qdisctest.WaitQuiescent(t, d)
			clock.Advance(time.Millisecond)
			qdisctest.WaitQuiescent(t, d)
			if n := link.NumRecords(); n != 1 {
				t.Fatalf("%d packets sent at the first opportunity, want 1", n)
			}
			// A change to 3 opportunities a ms: the new trace starts now,
			// at 1 ms, its first three at 2 ms, which carry the two
			// packets left, and one is idle.
			three, err := k.Parse("trace " + writeTrace(t, "1\n1\n1\n") + " limit 10")
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Change(d, three); err != nil {
				t.Fatal(err)
			}
			qdisctest.WaitQuiescent(t, d)
			clock.Advance(time.Millisecond)
			qdisctest.WaitQuiescent(t, d)
			if n := link.NumRecords(); n != 3 {
				t.Fatalf("%d packets sent after the change, want 3", n)
			}
			var b strings.Builder
			qdisc.WriteTC(&b, "eth0", "root refcnt 2", d.Show(), &qdisc.Handles{})
			want := "qdisc mmlink 8001: dev eth0 root refcnt 2 trace " + three.(mmlink.Options).Trace.Name() + " limit 10\n" +
				" Sent 4500 bytes 3 pkt (dropped 0, overlimits 3 requeues 0)\n backlog 0b 0p requeues 0\n" +
				"  opportunities 4 idle 1 unused 1504b\n" // the old trace's one, and the new one's three at 2 ms
			if got := b.String(); got != want {
				t.Errorf("tc -s qdisc show:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
