package lab

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRRULParsing: an RRUL run's figures come from ss's counters, turned
// into rates per sample, and ping -D's lines, timed from the run's start.
func TestRRULParsing(t *testing.T) {
	t.Run("ss counters", func(t *testing.T) {
		info := "\t cubic wscale:7,7 rto:204 bytes_sent:28 bytes_acked:28 bytes_received:2746678773 segs_out:5708"
		for _, tc := range []struct {
			name string
			want uint64
			ok   bool
		}{
			{"bytes_received", 2746678773, true},
			{"bytes_acked", 28, true},
			{"bytes_retrans", 0, false},
		} {
			if got, ok := ssCounter(info, tc.name); got != tc.want || ok != tc.ok {
				t.Errorf("ssCounter(%s) = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
			}
		}
	})
	t.Run("rates", func(t *testing.T) {
		samples := []map[int]uint64{
			{40000: 1000, 40002: 500},
			{40000: 3000, 40002: 500, 40001: 250},
			{40001: 500, 40002: 1500}, // 40000 closed
		}
		got := rrulRates(samples, 500*time.Millisecond)
		want := [][]float64{
			{16000, 32000, 0},
			{0, 4000, 4000},
			{8000, 0, 16000},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("rates (-want +got):\n%s", diff)
		}
	})
	t.Run("pings", func(t *testing.T) {
		start := time.Unix(1764412000, 0)
		out := "PING 10.0.0.1 (10.0.0.1) 56(84) bytes of data.\n" +
			"[1764412000.120000] 64 bytes from 10.0.0.1: icmp_seq=1 ttl=64 time=20.0 ms\n" +
			"[1764412001.005000] 64 bytes from 10.0.0.1: icmp_seq=2 ttl=64 time=5.00 ms\n" +
			"\n--- 10.0.0.1 ping statistics ---\n3 packets transmitted, 2 received, 33% packet loss, time 2002ms\n"
		pings, sent, err := parseTimedPings(out, start)
		if err != nil {
			t.Fatal(err)
		}
		want := []RRULPing{{At: 100 * time.Millisecond, RTT: 20 * time.Millisecond}, {At: time.Second, RTT: 5 * time.Millisecond}}
		if diff := cmp.Diff(want, pings, cmp.Comparer(func(a, b time.Duration) bool { d := a - b; return d < time.Microsecond && d > -time.Microsecond })); diff != "" || sent != 3 {
			t.Errorf("pings (-want +got):\n%s\nsent %d, want 3", diff, sent)
		}
	})
}
