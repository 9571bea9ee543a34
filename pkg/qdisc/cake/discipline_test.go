package cake

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestDiscipline: cake on a link sends at its rate from its own timer
// (1000-byte packets at 1,000,000 bytes/s: one a millisecond), Change
// raises the rate in place with nothing lost or reordered, and TCStats
// prints tc -s's lines and cake's per-tin table.
func TestDiscipline(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	cfg := DefaultConfig()
	cfg.Bandwidth = 1_000_000
	d, err := New(link, clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 6 {
		pkt := qdisctest.MakePacket(1000, 1, uint64(i))
		if err := d.WritePacket(pkt); err != nil {
			t.Fatalf("WritePacket: %v", err)
		}
		pkt.DecRef()
	}
	qdisctest.WaitQuiescent(t, d)
	if n := len(link.Records()); n != 1 {
		t.Fatalf("%d packets left at once, want 1", n)
	}
	clock.Advance(999 * time.Microsecond)
	clock.Fire()
	qdisctest.WaitQuiescent(t, d)
	if n := len(link.Records()); n != 1 {
		t.Fatalf("%d packets by 0.999ms, want 1", n)
	}
	clock.Advance(time.Microsecond)
	clock.Fire()
	qdisctest.WaitQuiescent(t, d)
	if n := len(link.Records()); n != 2 {
		t.Fatalf("%d packets by 1ms, want 2", n)
	}
	// Ten times the rate: the rest leave 100us apart after the packet
	// booked at the old rate (due at 2ms).
	cfg.Bandwidth = 10_000_000
	if err := d.Change(cfg); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Millisecond + 300*time.Microsecond)
	clock.Fire()
	qdisctest.WaitQuiescent(t, d)
	for clock.Fire() > 0 {
		qdisctest.WaitQuiescent(t, d)
	}
	recs := link.Records()
	if len(recs) != 6 {
		t.Fatalf("%d packets by 2.3ms, want 6 (the rest of them 100us apart from 2ms)", len(recs))
	}
	for i, r := range recs {
		if r.Seq != uint64(i) {
			t.Fatalf("packet %d left %d-th", r.Seq, i)
		}
	}
	out := d.TCStats()
	for _, want := range []string{
		"Sent 6000 bytes 6 pkt (dropped 0,",
		" memory used: ",
		"                   Bulk  Best Effort        Voice\n",
		"  thresh          5Mbit       80Mbit       20Mbit\n",
		"  target            5ms          5ms          5ms\n",
		"  interval        100ms        100ms        100ms\n",
		"  pkts                0            6            0\n",
		"  bytes               0         6000            0\n",
		"  quantum           300         1514          610",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("TCStats lacks %q:\n%s", want, out)
		}
	}
	if got, want := d.String(), "cake bandwidth 80Mbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestChangeDiffserv: a change to fewer tins is refused while a tin it
// would remove holds packets (Linux would drop them), and made once they
// have left.
func TestChangeDiffserv(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Diffserv = Diffserv8
	s := testSched(t, cfg)
	enqueue(t, s, pk{tos: 48 << 2}, 0) // CS6: tin 7
	cfg.Diffserv = Diffserv3
	err := s.Change(cfg)
	if ce, ok := err.(*ConfigError); !ok || ce.Field != "diffserv" {
		t.Fatalf("Change to diffserv3 with tin 7 busy: %v, want a diffserv ConfigError", err)
	}
	pkt, _, _ := s.Dequeue(0)
	pkt.DecRef()
	if err := s.Change(cfg); err != nil {
		t.Fatalf("Change once drained: %v", err)
	}
	if n := len(s.XStats().Tins); n != 3 {
		t.Errorf("%d tins after the change, want 3", n)
	}
}

// TestNewTo: on the receive path cake queues what a link delivers (its
// headers in the data) and writes it to out from its own timer, at its
// rate; enqueuers never write.
func TestNewTo(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	out := qdisctest.NewLink(clock)
	cfg := DefaultConfig()
	cfg.Bandwidth, cfg.Ingress = 1_000_000, true
	d, err := NewTo(out, link, clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 3 {
		pkt := pk{src: uint16(i), payload: 960, seq: uint64(i), notParsed: true}.build()
		if err := d.Enqueue(pkt, 0); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		pkt.DecRef()
	}
	qdisctest.WaitQuiescent(t, d)
	if n := len(out.Records()); n != 1 {
		t.Fatalf("%d packets delivered at once, want 1", n)
	}
	clock.Advance(2 * time.Millisecond)
	for clock.Fire() > 0 {
		qdisctest.WaitQuiescent(t, d)
	}
	qdisctest.WaitQuiescent(t, d)
	if n := len(out.Records()); n != 3 {
		t.Fatalf("%d packets delivered by 2ms, want 3 (1000 bytes a millisecond)", n)
	}
	if s := d.Stats(); s.Packets != 3 || s.Bytes != 3000 {
		t.Errorf("stats %+v", s)
	}
}

// TestCloseRace: writers racing Close lose no reference and leave no
// goroutine; every packet cake took is sent or dropped once (qdisctest's
// checks), unlimited, shaping (packets queued at Close), and with a
// memlimit that drops.
func TestCloseRace(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"unlimited", func(*Config) {}},
		{"shaping", func(c *Config) { c.Bandwidth = 1_250_000 }},
		{"shaping, memlimit, ingress, ack-filter", func(c *Config) {
			c.Bandwidth, c.Memlimit, c.Ingress, c.AckFilter = 1_250_000, MinMemlimit, true, AckFilterAggressive
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.cfg(&cfg)
			for range 3 {
				qdisctest.CloseRace(t, func() qdisctest.StatsQdisc {
					link := qdisctest.NewLink(nil)
					link.Discard = true
					d, err := New(link, tcpip.NewStdClock(), cfg)
					if err != nil {
						t.Fatal(err)
					}
					return d
				}, 8, 400)
			}
		})
	}
}
