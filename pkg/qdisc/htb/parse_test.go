package htb_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// TestParseClass: tc's words to a ClassConfig, and String back to words
// that parse to the same ClassConfig.
func TestParseClass(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want htb.ClassConfig
		out  string // String's words, if not in
	}{
		{in: "parent 1:1 classid 1:10 htb rate 10mbit ceil 20mbit burst 15k cburst 15k prio 1 quantum 1514 overhead 14 mpu 64",
			want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10 * mbit, Ceil: 20 * mbit, Burst: 15 << 10, CBurst: 15 << 10,
				Prio: 1, Quantum: 1514, Overhead: 14, MPU: 64},
			out: "parent 1:1 classid 1:10 htb rate 10Mbit ceil 20Mbit burst 15Kb cburst 15Kb prio 1 quantum 1514 overhead 14 mpu 64"},
		{in: "root classid 1:1 htb rate 1Gbit", want: htb.ClassConfig{ID: 0x10001, Rate: 1000 * mbit}},
		{in: "parent root classid 1:1 rate 1gbit", want: htb.ClassConfig{ID: 0x10001, Rate: 1000 * mbit}, out: "root classid 1:1 htb rate 1Gbit"},
		{in: "classid 1:1 root rate 1gbit", want: htb.ClassConfig{ID: 0x10001, Rate: 1000 * mbit}, out: "root classid 1:1 htb rate 1Gbit"},
		// A bare rate is bits per second, as in tc.
		{in: "parent 1: classid 1:1 htb rate 1000000", want: htb.ClassConfig{ID: 0x10001, Parent: 0x10000, Rate: mbit},
			out: "parent 1: classid 1:1 htb rate 1Mbit"},
		{in: "parent 1:0 classid 1:a rate 800", want: htb.ClassConfig{ID: 0x1000a, Parent: 0x10000, Rate: 100},
			out: "parent 1: classid 1:a htb rate 800bit"},
		{in: "classid 1:A parent ffff:FFFF rate 125kbps", want: htb.ClassConfig{ID: 0x1000a, Parent: 0xffffffff, Rate: mbit},
			out: "parent ffff:ffff classid 1:a htb rate 1Mbit"},
		{in: "parent 1:1 classid 1:10 rate 1.5mbit", want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 187500},
			out: "parent 1:1 classid 1:10 htb rate 1500Kbit"},
		{in: "parent 1:1 classid 1:10 rate 1234567bps", want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 1234567},
			out: "parent 1:1 classid 1:10 htb rate 9876536bit"},
		{in: "parent 1:1 classid 1:10 rate 10tbit", want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 1.25e12},
			out: "parent 1:1 classid 1:10 htb rate 10Tbit"},
		{in: "parent 1:1 classid 1:10 rate 10mbit buffer 1514/8 cbuffer 1mb",
			want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10 * mbit, Burst: 1514, CBurst: 1 << 20},
			out:  "parent 1:1 classid 1:10 htb rate 10Mbit burst 1514b cburst 1Mb"},
		{in: "parent 1:1 classid 1:10 rate 10mbit maxburst 2k cmaxburst 3000",
			want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10 * mbit, Burst: 2048, CBurst: 3000},
			out:  "parent 1:1 classid 1:10 htb rate 10Mbit burst 2Kb cburst 3000b"},
		// A quota (ours): a budget per period, then a rate or a block.
		{in: "root classid 1:1 rate 10mbit quota 50gb per 24h then 1mbit",
			want: htb.ClassConfig{ID: 0x10001, Rate: 10 * mbit, Quota: &htb.Quota{Bytes: 50 << 30, Period: 24 * time.Hour, Rate: mbit}},
			out:  "root classid 1:1 htb rate 10Mbit quota 53687091200b per 24h0m0s then 1Mbit"},
		{in: "root classid 1:1 rate 10mbit quota 100gb per 30d",
			want: htb.ClassConfig{ID: 0x10001, Rate: 10 * mbit, Quota: &htb.Quota{Bytes: 100 << 30, Period: 30 * 24 * time.Hour}},
			out:  "root classid 1:1 htb rate 10Mbit quota 107374182400b per 720h0m0s then block"},
		// mtu sets tc's default buckets: rate/1e9 + mtu.
		{in: "parent 1:1 classid 1:10 rate 10gbit ceil 20gbit mtu 9000",
			want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10000 * mbit, Ceil: 20000 * mbit, Burst: 9001, CBurst: 9002},
			out:  "parent 1:1 classid 1:10 htb rate 10Gbit ceil 20Gbit burst 9001b cburst 9002b"},
		{in: "parent 1:1 classid 1:10 rate 10gbit burst 20k mtu 9000",
			want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10000 * mbit, Burst: 20 << 10, CBurst: 9001},
			out:  "parent 1:1 classid 1:10 htb rate 10Gbit burst 20Kb cburst 9001b"},
		{in: "parent 1:1 classid 1:10 rate 10gbit mtu 1600", want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10000 * mbit},
			out: "parent 1:1 classid 1:10 htb rate 10Gbit"},
		// ceil 0 is the rate, as in tc.
		{in: "parent 1:1 classid 1:10 rate 10mbit ceil 0 quantum 0 prio 0 overhead 0 mpu 0 linklayer ethernet",
			want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10 * mbit}, out: "parent 1:1 classid 1:10 htb rate 10Mbit"},
		{in: "parent 1:1 classid 1:10 htb rate 10Mbit ceil 1Mbit prio 7 quantum 2147483647 overhead 65535 mpu 65535",
			want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10 * mbit, Ceil: mbit, Prio: 7, Quantum: math.MaxInt32, Overhead: 65535, MPU: 65535}},
		{in: "  parent\t1:1   classid 1:10\nrate 10Mbit ", want: htb.ClassConfig{ID: 0x10010, Parent: 0x10001, Rate: 10 * mbit},
			out: "parent 1:1 classid 1:10 htb rate 10Mbit"},
	} {
		got, err := htb.ParseClass(tc.in)
		if err != nil {
			t.Errorf("ParseClass(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseClass(%q) (-want +got):\n%s", tc.in, diff)
		}
		out := tc.out
		if out == "" {
			out = tc.in
		}
		if s := got.String(); s != out {
			t.Errorf("ParseClass(%q).String() = %q, want %q", tc.in, s, out)
		}
		again, err := htb.ParseClass(got.String())
		if err != nil || !cmp.Equal(again, got) {
			t.Errorf("ParseClass(%q) = %+v, %v; want %+v back", got.String(), again, err, got)
		}
	}
}

// TestParseClassRefuses: every bad word is refused with an error that
// names it.
func TestParseClassRefuses(t *testing.T) {
	const ok = "parent 1:1 classid 1:10 rate 10mbit "
	for _, tc := range []struct{ in, want string }{
		{"", "no classid"},
		{"parent 1:1 rate 10mbit", "no classid"},
		{"classid 1:10 rate 10mbit", "no parent"},
		{"parent 1:1 classid 1:10", "no rate: give the rate"},
		{"parent 1:1 classid 1:10 rate", `"rate" needs a value`},
		{ok + "foo 1", `unknown word "foo"`},
		{ok + "quota 1gb", "a quota needs its budget and its period"},
		{ok + "per 24h", "a quota needs its budget and its period"},
		{ok + "quota 0 per 24h", "budget is 0 bytes"},
		{ok + "quota 1gb per 1us", "shorter than 1ms"},
		{ok + "quota 1gb per tomorrow", "want a duration"},
		{ok + "quota 1gb per 24h then never", `then "never"`},
		{"dev eth0 " + ok, `unknown word "dev"`},
		{ok + "pr 1", `unknown word "pr"`},
		{ok + "rate 20mbit", `"rate" given twice`},
		{ok + "burst 1k buffer 2k", `"buffer" given twice`},
		{ok + "cburst 1k cmaxburst 2k", `"cmaxburst" given twice`},
		{"root " + ok, `"parent" given twice`},
		{ok + "htb htb", `"htb" given twice`},
		{"parent 1:1 classid 10 rate 10mbit", `classid "10": want tc's major:minor`},
		{"parent 1:1 classid 0:10 rate 10mbit", `classid "0:10": major 0`},
		{"parent 1:1 classid :10 rate 10mbit", `classid ":10"`},
		{"parent 1:1 classid 1:10000 rate 10mbit", `classid "1:10000"`},
		{"parent 1:1 classid 10000:1 rate 10mbit", `classid "10000:1"`},
		{"parent 1:1 classid 1:g rate 10mbit", `classid "1:g"`},
		{"parent 1:1 classid 1:-1 rate 10mbit", `classid "1:-1"`},
		{"parent 1:1 classid 1: rate 10mbit", "htb classid: classid 1:0 has minor 0"},
		{"parent x classid 1:10 rate 10mbit", `parent "x"`},
		{"parent none classid 1:10 rate 10mbit", `parent "none"`},
		{"parent 1:1 classid 1:10 rate 0", `rate "0": the class's guaranteed rate must be above 0`},
		{"parent 1:1 classid 1:10 rate 7", `rate "7": a bare number is bits per second`},
		{"parent 1:1 classid 1:10 rate 10%", `rate "10%": a percentage`},
		{"parent 1:1 classid 1:10 rate 10xbit", `rate "10xbit"`},
		{"parent 1:1 classid 1:10 rate -1mbit", `rate "-1mbit"`},
		{"parent 1:1 classid 1:10 rate 1e6", `rate "1e6"`},
		{"parent 1:1 classid 1:10 rate 99999999999999999999999tbit", `rate "99999999999999999999999tbit"`},
		{ok + "ceil fast", `ceil "fast"`},
		{ok + "burst 15k/3", `burst "15k/3": the cell size`},
		{ok + "burst 15k/", `burst "15k/"`},
		{ok + "burst 4gb", `burst "4gb": 4294967296 bytes is more than`},
		{ok + "cburst big", `cburst "big"`},
		{ok + "prio 8", `prio "8": prio is 0 (served first) to 7`},
		{ok + "prio -1", `prio "-1": want a number 0 to 7`},
		{ok + "quantum 2147483648", `quantum "2147483648"`},
		{ok + "quantum 1k", `quantum "1k"`},
		{ok + "overhead 65536", `overhead "65536": want bytes 0 to 65535`},
		{ok + "overhead -4", `overhead "-4"`},
		{ok + "mpu 70000", `mpu "70000"`},
		{ok + "mtu 0", `mtu "0"`},
		{ok + "linklayer atm", `linklayer "atm"`},
		{"parent 1:1 classid 1:10 rate 10tbit mtu 4294967295", "mtu 4294967295: the default burst"},
		// Checked as ClassConfig.Validate checks.
		{"parent 1:1 classid 1:10 rate 40", "htb class 1:10 burst: burst (tc's default"},
		{"parent 0:1 classid 1:10 rate 40", `parent "0:1": major 0`},
	} {
		_, err := htb.ParseClass(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseClass(%q) = %v, want an error saying %s", tc.in, err, tc.want)
		}
	}
}

// TestClassString: String writes every setting exactly, in tc's words.
func TestClassString(t *testing.T) {
	for _, tc := range []struct {
		c    htb.ClassConfig
		want string
	}{
		{htb.ClassConfig{ID: 0x10001, Rate: 1}, "root classid 1:1 htb rate 8bit"},
		{htb.ClassConfig{ID: 0x10001, Rate: 125}, "root classid 1:1 htb rate 1Kbit"},
		{htb.ClassConfig{ID: 0x10001, Rate: 126}, "root classid 1:1 htb rate 1008bit"},
		{htb.ClassConfig{ID: 0x10001, Rate: math.MaxUint64 / 8}, "root classid 1:1 htb rate 18446744073709551608bit"},
		{htb.ClassConfig{ID: 0x10001, Rate: math.MaxUint64/8 + 1}, "root classid 1:1 htb rate 2305843009213693952Bps"},
		{htb.ClassConfig{ID: 0xabcd1234, Parent: 0xabcd0000, Rate: 1, Burst: 1, CBurst: math.MaxUint32},
			"parent abcd: classid abcd:1234 htb rate 8bit burst 1b cburst 4294967295b"},
		{htb.ClassConfig{ID: 0x10002, Parent: 0x10001, Rate: 1, Burst: 1 << 10, CBurst: 4095 << 20, Overhead: -1},
			"parent 1:1 classid 1:2 htb rate 8bit burst 1Kb cburst 4095Mb overhead -1"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// TestParseQdisc: tc's words for the qdisc to a Config.
func TestParseQdisc(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want htb.Config
	}{
		{"handle 1: htb default 20 r2q 10 direct_qlen 100", htb.Config{Handle: 0x10000, Default: 0x10020, R2Q: 10, DirectQLen: 100}},
		{"root handle 5: htb default 0x1a", htb.Config{Handle: 0x50000, Default: 0x5001a}},
		{"default 1A handle ffff", htb.Config{Handle: 0xffff0000, Default: 0xffff001a}},
		{"htb default 20", htb.Config{Default: 0x10020}},
		{"handle 1:0 default 0", htb.Config{Handle: 0x10000}},
		{"default ffff r2q 1 direct_qlen 4294967295", htb.Config{Default: 0x1ffff, R2Q: 1, DirectQLen: math.MaxUint32}},
		{"", htb.Config{}},
	} {
		got, err := htb.ParseQdisc(tc.in)
		if err != nil {
			t.Errorf("ParseQdisc(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParseQdisc(%q) (-want +got):\n%s", tc.in, diff)
		}
		again, err := htb.ParseQdisc(qdiscWords(got))
		if err != nil || !cmp.Equal(again, got, cmpopts.EquateEmpty()) {
			t.Errorf("ParseQdisc(%q) = %+v, %v; want %+v back", qdiscWords(got), again, err, got)
		}
	}
}

// qdiscWords writes c's qdisc settings in ParseQdisc's words.
func qdiscWords(c htb.Config) string {
	var b strings.Builder
	if c.Handle != 0 {
		fmt.Fprintf(&b, "handle %x: ", c.Handle>>16)
	}
	b.WriteString("htb")
	if c.Default != 0 {
		fmt.Fprintf(&b, " default %x", c.Default&0xffff)
	}
	if c.R2Q != 0 {
		fmt.Fprintf(&b, " r2q %d", c.R2Q)
	}
	if c.DirectQLen != 0 {
		fmt.Fprintf(&b, " direct_qlen %d", c.DirectQLen)
	}
	return b.String()
}

// TestParseQdiscRefuses: every bad word is refused with an error that
// names it.
func TestParseQdiscRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"handle 0:", `handle "0:": major 0`},
		{"handle 1:5", `handle "1:5": a qdisc's handle has minor 0`},
		{"handle x:", `handle "x:"`},
		{"handle :", `handle ":"`},
		{"handle 10000:", `handle "10000:"`},
		{"handle", `"handle" needs a value`},
		{"default 10000", `default "10000": want the default class's minor in hex`},
		{"default g", `default "g"`},
		{"default -1", `default "-1"`},
		{"default 0x", `default "0x"`},
		{"default 1 default 2", `"default" given twice`},
		{"r2q 0", `r2q "0": r2q is at least 1`},
		{"r2q -1", `r2q "-1"`},
		{"r2q 4294967296", `r2q "4294967296"`},
		{"direct_qlen 0", `direct_qlen "0": direct_qlen 0 would drop`},
		{"direct_qlen 1k", `direct_qlen "1k"`},
		{"offload", "leave offload out"},
		{"parent 1:1 handle 2:", "parent: this htb is the link's root qdisc"},
		{"handle 1: tbf", `unknown word "tbf"`},
		{"root root", `"root" given twice`},
	} {
		_, err := htb.ParseQdisc(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseQdisc(%q) = %v, want an error saying %s", tc.in, err, tc.want)
		}
	}
}

// TestParseClassErrorIsConfigError: a bound that Validate checks comes
// back as its *ConfigError, naming the class and the setting.
func TestParseClassErrorIsConfigError(t *testing.T) {
	_, err := htb.ParseClass("parent 1:1 classid 1:10 rate 1mbit cburst 1 ceil 1tbit")
	var ce *htb.ConfigError
	if !errors.As(err, &ce) || ce.Class != 0x10010 || ce.Field != "cburst" {
		t.Errorf("ParseClass = %v, want a *ConfigError for class 1:10's cburst", err)
	}
}

// A class and its qdisc in tc's words, and an error that says what to
// change.
func ExampleParseClass() {
	q, _ := htb.ParseQdisc("root handle 1: htb default 20")
	for _, s := range []string{
		"parent 1: classid 1:1 htb rate 1gbit",
		"parent 1:1 classid 1:10 htb rate 900mbit ceil 1gbit",
		"parent 1:1 classid 1:20 htb rate 10mbit burst 15k prio 1",
	} {
		c, err := htb.ParseClass(s)
		if err != nil {
			fmt.Println(err)
			return
		}
		q.Classes = append(q.Classes, c)
		fmt.Println(c)
	}
	fmt.Println(q.Validate())
	_, err := htb.ParseClass("parent 1:1 classid 1:30 htb rate 10mbit prio 9")
	fmt.Println(err)
	// Output:
	// parent 1: classid 1:1 htb rate 1Gbit
	// parent 1:1 classid 1:10 htb rate 900Mbit ceil 1Gbit
	// parent 1:1 classid 1:20 htb rate 10Mbit burst 15Kb prio 1
	// <nil>
	// htb: prio "9": prio is 0 (served first) to 7 (Linux would silently take 7)
}
