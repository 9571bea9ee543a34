package caketest

import (
	"slices"
	"testing"
)

// TestSetRate checks cake_set_rate's constants, worked by hand from
// rate_ns = (1e9 << 34) / rate, halved (and the shift lowered) until it
// is below 2^34.
func TestSetRate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rate        uint64 // bytes/s
		rateNS      uint64
		shift       uint16
		quantum     uint16
		targetUS    uint32
		intervalUS  uint32
		memoryLimit uint32
	}{
		{
			// 1e9/125000 = 8000 ns a byte: 8000<<34 needs 13 halvings
			// to fall below 2^34 (8000<<21 = 16777216000 < 17179869184),
			// so shift 21, rate_ns 8000<<21. Quantum: 125000>>12 = 30,
			// raised to 300. mtu_time = 1514*8000 = 12112000 ns; target
			// max(1.5*12.112ms, 5ms) = 18.168ms; interval max(100ms +
			// 18.168 - 5, 2*18.168) = 113.168ms. Memory: 125000*100000/
			// 250000 = 50000, raised to 4 MiB.
			name: "1mbit", rate: 125000, rateNS: 8000 << 21, shift: 21, quantum: 300,
			targetUS: 18168, intervalUS: 113168, memoryLimit: 4 << 20,
		},
		{
			// 80 ns a byte: 80<<27 = 10737418240 < 2^34 <= 80<<28, so
			// shift 27. Quantum 12500000>>12 = 3051, capped at 1514.
			// mtu_time 1514*80 = 121120 ns; 1.5x = 181.68us < 5ms: target
			// 5ms, interval 100ms. Memory 12500000*100000/250000 =
			// 5000000.
			name: "100mbit", rate: 12500000, rateNS: 80 << 27, shift: 27, quantum: 1514,
			targetUS: 5000, intervalUS: 100000, memoryLimit: 5000000,
		},
		{
			// 0.8 ns a byte: (1e9<<34)/1.25e9 = 13743895347 (floor of
			// 13743895347.2), already below 2^34: shift 34. Memory
			// 1.25e9*100000/250000 = 5e8, then capped at 10240*1514 =
			// 15503360.
			name: "10gbit", rate: 1250000000, rateNS: 13743895347, shift: 34, quantum: 1514,
			targetUS: 5000, intervalUS: 100000, memoryLimit: 15503360,
		},
		{
			// Below MIN_RATE the division is by 64: 1e9/64 = 15625000
			// ns a byte, 15625000<<k < 2^34 for k <= 10: shift 10.
			// mtu_time = 1514*15625000 = 23656250000; target 1.5x =
			// 35484375000 ns; interval 2x target = 70968750000 ns.
			name: "10 bytes/s", rate: 10, rateNS: 15625000 << 10, shift: 10, quantum: 300,
			targetUS: 35484375, intervalUS: 70968750, memoryLimit: 4 << 20,
		},
		{
			// Unlimited: no shaper, quantum 1514, target and interval as
			// given, memory 10240*1514.
			name: "unlimited", rate: 0, rateNS: 0, shift: 0, quantum: 1514,
			targetUS: 5000, intervalUS: 100000, memoryLimit: 15503360,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.Rate = tc.rate
			p.TinMode = BestEffort
			m, err := New(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			rns, sh := m.RateNS()
			if rns != tc.rateNS || sh != tc.shift {
				t.Errorf("rate_ns, rate_shft = %d, %d; want %d, %d", rns, sh, tc.rateNS, tc.shift)
			}
			s := m.Stats()
			ts := s.Tins[0]
			if ts.FlowQuantum != uint32(tc.quantum) || ts.TargetUS != tc.targetUS || ts.IntervalUS != tc.intervalUS {
				t.Errorf("quantum, target, interval = %d, %d, %d; want %d, %d, %d",
					ts.FlowQuantum, ts.TargetUS, ts.IntervalUS, tc.quantum, tc.targetUS, tc.intervalUS)
			}
			if s.MemoryLimit != tc.memoryLimit {
				t.Errorf("memory limit %d, want %d", s.MemoryLimit, tc.memoryLimit)
			}
		})
	}
}

// TestTinRates checks the diffserv4 and precedence tins' rates and DRR
// quanta (cake_config_diffserv4: rate, rate/16, rate/2, rate/4 and 1024,
// 64, 512, 256; precedence: 7/8 of the previous tin each).
func TestTinRates(t *testing.T) {
	p := DefaultParams()
	p.Rate = 1 << 20
	p.TinMode = Diffserv4
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantRate := []uint64{1 << 20, 1 << 16, 1 << 19, 1 << 18}
	wantQ := []uint16{1024, 64, 512, 256}
	for i := range 4 {
		if m.tins[i].rateBps != wantRate[i] || m.tins[i].tinQuantum != wantQ[i] {
			t.Errorf("diffserv4 tin %d: rate %d quantum %d, want %d %d", i, m.tins[i].rateBps, m.tins[i].tinQuantum, wantRate[i], wantQ[i])
		}
	}
	// Dump order puts the bulk tin first.
	var order []int
	for _, ts := range m.Stats().Tins {
		order = append(order, ts.Tin)
	}
	if want := []int{1, 0, 2, 3}; !slices.Equal(order, want) {
		t.Errorf("dump order %v, want %v", order, want)
	}

	p.TinMode = Precedence
	p.Rate = 8000
	m, err = New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 8000, 7000, 6125, 5359 (42875>>3), 4689 (37513>>3), 4102, 3589, 3140.
	// Quanta: 256, 224, 196, 171, 149, 130, 113, 98.
	wantRate = []uint64{8000, 7000, 6125, 5359, 4689, 4102, 3589, 3140}
	wantQ = []uint16{256, 224, 196, 171, 149, 130, 113, 98}
	for i := range 8 {
		if m.tins[i].rateBps != wantRate[i] || m.tins[i].tinQuantum != wantQ[i] {
			t.Errorf("precedence tin %d: rate %d quantum %d, want %d %d", i, m.tins[i].rateBps, m.tins[i].tinQuantum, wantRate[i], wantQ[i])
		}
	}
}

// TestOverhead checks cake_overhead's lengths for the framing keywords.
func TestOverhead(t *testing.T) {
	full := pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: 1460, macLen: 14}.ipv4() // 1500 IP bytes
	small := pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: 6, macLen: 14}.ipv4()   // 46 IP bytes
	// A GSO packet: headers 14+20+32 (TCP with timestamps) = 66, payload
	// 2*1448+100, gso_size 1448, 3 segments; skb->len = 66+2996 = 3062.
	gso := pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: 2996, macLen: 14,
		opts: optTS(1, 2)[:12], gsoSize: 1448, gsoSegs: 3}.ipv4()
	for _, tc := range []struct {
		name     string
		p        Packet
		flag     bool
		overhead int16
		mpu      uint16
		atm      ATMMode
		want     uint32
	}{
		// raw: the whole 1514, nothing added.
		{name: "raw", p: full, want: 1514},
		// raw with overhead 44 (tc "overhead 44 raw" is not possible, but
		// the kernel adds to the whole length without the flag): 1558.
		{name: "no flag, overhead 44", p: full, overhead: 44, want: 1558},
		// The flag replaces the 14-byte link header: 1500+44 = 1544.
		{name: "overhead 44", p: full, flag: true, overhead: 44, want: 1544},
		// ATM: 1544 bytes need ceil(1544/48) = 33 cells (32*48 = 1536
		// is short) of 53 bytes: 1749.
		{name: "atm overhead 44", p: full, flag: true, overhead: 44, atm: ATMATM, want: 33 * 53},
		// PTM: 1544 + ceil(1544/64) = 1544 + 25 = 1569.
		{name: "ptm overhead 44", p: full, flag: true, overhead: 44, atm: ATMPTM, want: 1569},
		// ethernet (overhead 38 mpu 84): 46+38 = 84, at the mpu.
		{name: "mpu", p: small, flag: true, overhead: 38, mpu: 84, want: 84},
		// mpu above: 46 bytes with overhead 0 and mpu 64 count 64.
		{name: "mpu floor", p: small, flag: true, mpu: 64, want: 64},
		// A negative overhead: 46-40 = 6.
		{name: "negative", p: small, flag: true, overhead: -40, want: 6},
		// ATM on the small one: 46+8 = 54 bytes: 2 cells, 106.
		{name: "atm small", p: small, flag: true, overhead: 8, atm: ATMATM, want: 106},
		// GSO, not split: 2 segments of 1448+66 = 1514 and the last of
		// 3062-2*1448 = 166: 1514*2+166 = 3194.
		{name: "gso", p: gso, want: 3194},
		// With overhead 44 and the flag: each 14 bytes shorter, 44 more:
		// (1544)*2 + 196 = 3284.
		{name: "gso overhead 44", p: gso, flag: true, overhead: 44, want: 3284},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.OverheadFlag, p.Overhead, p.MPU, p.ATM = tc.flag, tc.overhead, tc.mpu, tc.atm
			m, err := New(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			pk := tc.p.clone()
			if got := m.overhead(&pk); got != tc.want {
				t.Errorf("adjusted length %d, want %d", got, tc.want)
			}
		})
	}
}

// TestShaperDepartures checks that a shaped cake sends back to back at
// exactly its rate: each departure advances time_next_packet by
// len*rate_ns >> rate_shft, and the watchdog fires then.
func TestShaperDepartures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rate   uint64
		ipLen  int   // IP bytes of each packet
		gap    int64 // expected ns between departures
		params func(*Params)
	}{
		// 1mbit: 8000 ns a byte, 1000-byte packets: 8 ms apart.
		{name: "1mbit", rate: 125000, ipLen: 1000, gap: 8000000},
		// 100mbit: 80 ns a byte, 1514-byte frames (1500 IP + 14): 121120.
		{name: "100mbit", rate: 12500000, ipLen: 1500, gap: 121120},
		// 10gbit: 1514 * 13743895347 >> 34 = 1211 (1211.2 floored).
		{name: "10gbit", rate: 1250000000, ipLen: 1500, gap: 1211},
		// atm overhead 44 at 1mbit: 1749 bytes a packet: 13992000 ns.
		{name: "1mbit atm", rate: 125000, ipLen: 1500, gap: 1749 * 8000, params: func(p *Params) {
			p.ATM, p.Overhead, p.OverheadFlag = ATMATM, 44, true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.Rate = tc.rate
			p.TinMode = BestEffort
			if tc.params != nil {
				tc.params(&p)
			}
			m, err := New(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			const t0 = int64(1e9)
			mac := 14
			if tc.ipLen == 1000 {
				mac = 0
			}
			for i := range 20 {
				ev := m.Enqueue(t0, pkt{id: uint64(i), src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2,
					ecn: 2, payload: tc.ipLen - 40, macLen: mac}.ipv4())
				if len(ev) != 0 {
					t.Fatalf("enqueue %d: %v", i, ev)
				}
			}
			var at []int64
			now := t0
			for len(at) < 20 {
				out, _ := m.DequeueAll(now)
				for range out {
					at = append(at, now)
				}
				if m.NextTime() < 0 {
					break
				}
				now = m.NextTime()
			}
			if len(at) != 20 {
				t.Fatalf("%d departures, want 20", len(at))
			}
			for i, x := range at {
				if want := t0 + int64(i)*tc.gap; x != want {
					t.Fatalf("departure %d at %d, want %d (gaps of %d)", i, x-t0, want-t0, tc.gap)
				}
			}
		})
	}
}
