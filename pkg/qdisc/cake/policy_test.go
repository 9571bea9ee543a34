package cake_test

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// TestTighten: what a pod may and may not change of the operator's cake,
// each refusal naming the setting.
func TestTighten(t *testing.T) {
	for _, tc := range []struct {
		name, operator, pod string
		field               string // "" if allowed
		want                string
	}{
		{"the same", "bandwidth 100mbit", "bandwidth 100mbit", "", ""},
		{"a lower bandwidth", "bandwidth 100mbit", "bandwidth 50mbit", "", ""},
		{"a higher bandwidth", "bandwidth 100mbit", "bandwidth 101mbit", "bandwidth", "give 100Mbit or less"},
		{"unlimited under a bandwidth", "bandwidth 100mbit", "unlimited", "bandwidth", "unlimited would lift it"},
		{"any bandwidth under unlimited", "", "bandwidth 10gbit", "", ""},
		{"autorate under unlimited", "", "autorate-ingress", "", ""},
		{"autorate under a bandwidth", "bandwidth 100mbit", "bandwidth 100mbit autorate-ingress", "autorate-ingress", "rise past"},
		{"autorate dropped", "bandwidth 100mbit autorate-ingress", "bandwidth 10mbit", "autorate-ingress", "keep autorate-ingress"},
		{"autorate kept, lower estimate", "bandwidth 100mbit autorate-ingress", "bandwidth 10mbit autorate-ingress", "", ""},
		{"diffserv, isolation, ack filter, wash, gso: free", "bandwidth 100mbit", "bandwidth 100mbit besteffort flowblind ack-filter-aggressive wash no-split-gso", "", ""},
		{"rtt and target: free", "bandwidth 100mbit memlimit 32mb", "bandwidth 100mbit rtt 1s target 1ms memlimit 32mb", "", ""},
		{"overhead raised", "bandwidth 100mbit ethernet", "bandwidth 100mbit ethernet ether-vlan", "", ""},
		{"overhead lowered", "bandwidth 100mbit ethernet", "bandwidth 100mbit overhead 37 mpu 84", "overhead", "give 38 or more"},
		{"mpu lowered", "bandwidth 100mbit ethernet", "bandwidth 100mbit overhead 38", "mpu", "give 84 or more"},
		{"mpu raised", "bandwidth 100mbit ethernet", "bandwidth 100mbit ethernet mpu 100", "", ""},
		{"noatm to ptm to atm", "bandwidth 100mbit overhead 10", "bandwidth 100mbit overhead 10 ptm", "", ""},
		{"ptm to atm", "bandwidth 100mbit bridged-ptm", "bandwidth 100mbit bridged-ptm atm", "", ""},
		{"atm to ptm", "bandwidth 100mbit pppoe-vcmux", "bandwidth 100mbit pppoe-vcmux ptm", "atm", "give atm"},
		{"ptm to noatm", "bandwidth 100mbit bridged-ptm", "bandwidth 100mbit overhead 22", "atm", "give ptm or atm"},
		{"compensated to raw", "bandwidth 100mbit ethernet", "bandwidth 100mbit raw ethernet", "", ""},
		{"raw to compensated", "bandwidth 100mbit raw overhead 20", "bandwidth 100mbit overhead 30", "raw", "keep raw"},
		{"egress to ingress", "bandwidth 100mbit", "bandwidth 100mbit ingress", "", ""},
		{"ingress to egress", "bandwidth 100mbit ingress", "bandwidth 100mbit", "ingress", "keep ingress"},
		{"framing free when unshaped", "ethernet ingress memlimit 1mb", "memlimit 1mb", "", ""},
		{"memlimit lowered", "memlimit 32mb", "memlimit 16mb", "", ""},
		{"memlimit raised", "memlimit 32mb", "memlimit 33mb", "memlimit", "give 32Mb or less"},
		{"memlimit dropped for cake's 4Mb", "bandwidth 1mbit memlimit 4mb", "bandwidth 1mbit", "", ""},
		{"memlimit dropped for more than it", "bandwidth 1mbit memlimit 1mb", "bandwidth 1mbit", "memlimit", "give memlimit 1Mb or less"},
		{"memlimit under cake's own, within the smallest link's", "bandwidth 100mbit", "bandwidth 100mbit memlimit 680kb", "", ""},
		{"memlimit under cake's own, past the smallest link's", "bandwidth 100mbit", "bandwidth 100mbit memlimit 681kb", "memlimit", "give 680Kb or less"},
		{"a longer rtt grows cake's own", "bandwidth 100mbit", "bandwidth 100mbit rtt 200ms", "memlimit", "lower the rtt or the bandwidth"},
		{"a longer rtt at a lower bandwidth", "bandwidth 100mbit", "bandwidth 50mbit rtt 200ms", "", ""},
		{"a bandwidth under unlimited: cake's own is smaller", "", "bandwidth 10gbit rtt 1s", "", ""},
		{"nat", "", "nat", "nat", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, err := cake.ParseQdisc(tc.operator)
			if err != nil {
				t.Fatalf("ParseQdisc(%q) = %v", tc.operator, err)
			}
			pod, err := cake.ParseQdisc(tc.pod)
			if tc.field == "nat" {
				pod, err = cake.DefaultConfig(), nil
				pod.NAT = true
			}
			if err != nil {
				t.Fatalf("ParseQdisc(%q) = %v", tc.pod, err)
			}
			got, err := op.Tighten(pod)
			if tc.field == "" {
				if err != nil || got != pod {
					t.Fatalf("Tighten(%q) under %q = %v, want it allowed", tc.pod, tc.operator, err)
				}
				return
			}
			var ce *cake.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Tighten(%q) under %q = %v, want a refusal of %s with %q", tc.pod, tc.operator, err, tc.field, tc.want)
			}
		})
	}
	t.Run("an invalid operator", func(t *testing.T) {
		op := cake.DefaultConfig()
		op.FwMark = 1
		if _, err := op.Tighten(cake.DefaultConfig()); err == nil || !strings.Contains(err.Error(), "operator") || !strings.Contains(err.Error(), "fwmark") {
			t.Errorf("Tighten under an operator with fwmark = %v, want an error naming the operator's fwmark", err)
		}
	})
}

// TestTightenNeverLoosens is Tighten's property: a pod configuration it
// allows never sends a packet of any length faster than the operator's
// (the time it takes, WireLen/Bandwidth, is never shorter), nor lets
// queued packets take more memory on any link.
func TestTightenNeverLoosens(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	r := rand.New(rand.NewPCG(29, 4))
	allowed := 0
	lengths := []uint32{0, 1, 13, 14, 15, 40, 47, 48, 49, 60, 63, 64, 65, 84, 85, 96, 127, 128, 576, 1280, 1500, 1514, 1518, 9000, 65535, 65549}
	for range 40000 {
		op := randomConfig(r)
		var pod cake.Config
		if r.IntN(2) == 0 {
			pod = randomConfig(r)
		} else {
			pod = nudge(r, op)
		}
		if _, err := op.Tighten(pod); err != nil {
			continue
		}
		allowed++
		lengths = lengths[:26]
		for range 8 {
			lengths = append(lengths, uint32(r.IntN(70000)))
		}
		for _, l := range lengths {
			for _, off := range []uint32{0, 4, 14, 18, 22} {
				wp, wo := cake.WireLen(pod, l, off), cake.WireLen(op, l, off)
				if op.Bandwidth != 0 && !op.Autorate {
					// pod's time wp/Bp >= op's wo/Bo; Bp != 0 here.
					if pod.Bandwidth == 0 || slower(wp, pod.Bandwidth, wo, op.Bandwidth) < 0 {
						t.Fatalf("Tighten allowed\n  pod %v\nunder\n  op  %v\nand a %d-byte packet (%d of header) costs %d/%d s, against %d/%d", pod, op, l, off, wp, pod.Bandwidth, wo, op.Bandwidth)
					}
				}
				if (op.Bandwidth != 0 || op.Autorate) && wp < wo {
					t.Fatalf("Tighten allowed\n  pod %v\nunder\n  op  %v\nand a %d-byte packet (%d of header) costs %d bytes, against %d", pod, op, l, off, wp, wo)
				}
			}
		}
		for _, mtu := range []uint32{cake.MinLinkMTU, 69, 576, 1514, 9014, 65550, uint32(cake.MinLinkMTU + r.IntN(1<<20))} {
			if p, o := pod.MemoryLimit(mtu), op.MemoryLimit(mtu); p > o {
				t.Fatalf("Tighten allowed\n  pod %v\nunder\n  op  %v\nand on a link of MTU+header %d its memory limit is %d, above %d", pod, op, mtu, p, o)
			}
		}
	}
	// The property is only worth something if many pods were allowed.
	if allowed < 5000 {
		t.Errorf("only %d of 40000 pods were allowed; the generator hardly tests the rule", allowed)
	}
}

// slower compares a/b with c/d (b, d > 0): -1, 0 or 1.
func slower(a, b, c, d uint64) int {
	x := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(d))
	y := new(big.Int).Mul(new(big.Int).SetUint64(c), new(big.Int).SetUint64(b))
	return x.Cmp(y)
}

// nudge returns op with a few settings changed a little, the way a pod
// would ask: mostly allowed, sometimes not.
func nudge(r *rand.Rand, op cake.Config) cake.Config {
	c := op
	for range 1 + r.IntN(3) {
		switch r.IntN(9) {
		case 0:
			if c.Bandwidth > cake.MinBandwidth {
				c.Bandwidth -= r.Uint64N(c.Bandwidth - cake.MinBandwidth + 1)
			} else {
				c.Bandwidth = cake.MinBandwidth + r.Uint64N(1<<30)
			}
		case 1:
			c.Overhead = max(min(c.Overhead+int32(r.IntN(21))-5, cake.MaxOverhead), cake.MinOverhead)
		case 2:
			c.MPU = min(c.MPU+uint32(r.IntN(40)), cake.MaxMPU)
		case 3:
			c.ATM = cake.ATM(r.IntN(3))
		case 4:
			c.Raw = !c.Raw
		case 5:
			c.Ingress = !c.Ingress
		case 6:
			c.Memlimit = uint32(r.Uint64N(uint64(max(c.Memlimit, cake.MinMemlimit)) + 1))
			if c.Memlimit < cake.MinMemlimit {
				c.Memlimit = 0
			}
		case 7:
			c.Autorate = !c.Autorate
		case 8:
			c.Isolation, c.Diffserv, c.AckFilter = cake.Isolation(r.IntN(8)), cake.Diffserv(r.IntN(5)), cake.AckFilter(r.IntN(3))
		}
	}
	return c
}
