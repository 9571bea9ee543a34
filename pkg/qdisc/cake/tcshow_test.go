package cake

import "testing"

// TestTCLine holds cake's show line to what iproute2's q_cake.c prints
// (cake_print_opt) for what cake_dump reports of a cake added with the
// same words, worked by hand (this machine's kernel has no sch_cake to
// capture from): sprint_rate for the bandwidth, sprint_time (%.3g, since
// iproute2 5.7) for rtt, sprint_size for memlimit, no target, a space
// after each word (tc's trailing one dropped).
func TestTCLine(t *testing.T) {
	for _, tc := range []struct{ words, want string }{
		{"", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"},
		{"bandwidth 100mbit diffserv4 dual-dsthost wash ingress ack-filter-aggressive no-split-gso rtt 50ms ethernet",
			"bandwidth 100Mbit diffserv4 dual-dsthost nonat wash ingress ack-filter-aggressive no-split-gso rtt 50ms noatm overhead 38 mpu 84"},
		// 1234568bit: sprint_rate divides by 1000 while the rest is 0 or
		// the rate is 1000k or more, so 1234Kbit.
		{"bandwidth 1234568bit besteffort flowblind rtt 1234us memlimit 100000",
			"bandwidth 1234Kbit besteffort flowblind nonat nowash no-ack-filter split-gso rtt 1.23ms raw overhead 0 memlimit 100000b"},
		{"bandwidth 20mbit autorate-ingress diffserv8 srchost conservative memlimit 32mb",
			"bandwidth 20Mbit autorate-ingress diffserv8 srchost nonat nowash no-ack-filter split-gso rtt 100ms atm overhead 48 memlimit 32Mb"},
		{"bandwidth 1gbit precedence hosts ptm overhead 22 mpu 64 ack-filter rtt 1s",
			"bandwidth 1Gbit precedence hosts nonat nowash ack-filter split-gso rtt 1s ptm overhead 22 mpu 64"},
		{"bandwidth 1gbit rtt 10ms target 1ms", // target is ours: cake_dump does not report it
			"bandwidth 1Gbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 10ms raw overhead 0"},
	} {
		cfg, err := ParseQdisc(tc.words)
		if err != nil {
			t.Errorf("ParseQdisc(%q): %v", tc.words, err)
			continue
		}
		if got := cfg.TCLine(); got != tc.want {
			t.Errorf("tc qdisc add dev eth0 root cake %s:\n got %s\nwant %s", tc.words, got, tc.want)
		}
	}
}

// TestTCTime: the tins' times as sprint_time prints them.
func TestTCTime(t *testing.T) {
	for us, want := range map[uint32]string{5000: "5ms", 100000: "100ms", 1650: "1.65ms", 39: "39us", 1234567: "1.23s", 0: "0us"} {
		if got := tcTime(us); got != want {
			t.Errorf("tcTime(%d) = %q, want %q", us, got, want)
		}
	}
}
