package rate

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"1250000", 1_250_000}, // runsc: bare numbers are bytes per second
		{"0", 0},
		{"8bit", 1},
		{"10mbit", 1_250_000},
		{"10Mbit", 1_250_000},
		{"100MBIT", 12_500_000},
		{"1gbit", 125_000_000},
		{"100gbit", 12_500_000_000},
		{"1tbit", 125_000_000_000},
		{"1.5mbit", 187_500},
		{"1kbit", 125},
		{"1kibit", 128},
		{"1mibit", 131_072},
		{"1gibit", 134_217_728},
		{"1tibit", 137_438_953_472},
		{"1bps", 1},
		{"125kbps", 125_000},
		{"1mbps", 1_000_000},
		{"1gbps", 1_000_000_000},
		{"1tbps", 1_000_000_000_000},
		{"1kibps", 1024},
		{"2mibps", 2 << 20},
		{"1gibps", 1 << 30},
		{"1tibps", 1 << 40},
		{" 8mbit ", 1_000_000},
		{"12bit", 1}, // rounded down, as tc does
	} {
		got, err := ParseRate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"1514", 1514}, // runsc: bare numbers are bytes
		{"1514b", 1514},
		{"10k", 10240},
		{"10kb", 10240},
		{"10KB", 10240},
		{"1kib", 1024},
		{"1m", 1 << 20},
		{"2mb", 2 << 20},
		{"128mib", 128 << 20},
		{"1g", 1 << 30},
		{"1gb", 1 << 30},
		{"1gib", 1 << 30},
		{"1kbit", 128},
		{"1mbit", 131_072},
		{"1gbit", 134_217_728},
		{"1.5kb", 1536},
		{"0", 0},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func(string) (uint64, error)
		in    string
		says  string
	}{
		{"rate empty", ParseRate, "", "empty"},
		{"rate blank", ParseRate, "   ", "empty"},
		{"rate negative", ParseRate, "-10mbit", "negative"},
		{"rate unit only", ParseRate, "mbit", "no number"},
		{"rate two dots", ParseRate, "1.2.3mbit", "no number"},
		{"rate unknown unit", ParseRate, "10xbit", "unknown unit"},
		{"rate size unit", ParseRate, "10kb", "unknown unit"},
		{"rate bare fraction", ParseRate, "1.5", "whole bytes per second"},
		{"rate below a byte", ParseRate, "1bit", "less than one byte"},
		{"rate out of range", ParseRate, "1000000000000000000000", "out of range"},
		{"rate unit overflow", ParseRate, "100000000tbps", "out of range"},
		{"rate fraction overflow", ParseRate, "18446744073709551615.9bps", ""},
		{"rate too many digits", ParseRate, "1" + strings.Repeat("0", 60), "too many digits"},
		{"rate hex", ParseRate, "0x10", "unknown unit"},
		{"rate exponent", ParseRate, "1e6", "unknown unit"},
		{"size empty", ParseSize, "", "empty"},
		{"size negative", ParseSize, "-1", "negative"},
		{"size unknown unit", ParseSize, "10kbps", "unknown unit"},
		{"size bare fraction", ParseSize, "10.5", "whole bytes"},
		{"size out of range", ParseSize, "99999999999g", "out of range"},
		{"size below a byte", ParseSize, "0.1b", "less than one byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(tc.in)
			if tc.name == "rate fraction overflow" {
				// Rounds down to the largest uint64: accepted.
				if err != nil || got != ^uint64(0) {
					t.Fatalf("ParseRate(%q) = %d, %v; want max uint64", tc.in, got, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("parse(%q) = %d, nil; want an error", tc.in, got)
			}
			if !strings.Contains(err.Error(), `"`+tc.in+`"`) {
				t.Errorf("error %q does not quote the text %q", err, tc.in)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		rate uint64
		want string
	}{
		{12_500_000, "100Mbit"},
		{125_000_000, "1Gbit"},
		{12_500_000_000, "100Gbit"},
		{187_500, "1500Kbit"},
		{100, "800bit"},
		{125, "1Kbit"},
		{0, "0bit"},
	} {
		if got := FormatRate(tc.rate); got != tc.want {
			t.Errorf("FormatRate(%d) = %q, want %q", tc.rate, got, tc.want)
		}
	}
	for _, tc := range []struct {
		size uint64
		want string
	}{
		{1514, "1514b"},
		{2000, "2000b"},
		{10240, "10Kb"},
		{10250, "10Kb"},
		{1 << 20, "1Mb"},
		{128 << 20, "128Mb"},
		{4 << 30, "4Gb"},
		{1<<30 + 1000, "1Gb"}, // within 1 KiB
		{0, "0b"},
	} {
		if got := FormatSize(tc.size); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.size, got, tc.want)
		}
	}
}

// FuzzParseRate checks that ParseRate and ParseSize never panic, that an
// error shows the text exactly as given, quoted as Go quotes it (so an
// unprintable byte such as "\x11" is escaped, not printed raw), and that
// every rate accepted can be printed and used.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10mbit", "1250000", "1.5gbit", "-1", "", "kbit", "99999999999999999999tbps", "\x11", " 1 gbit\n", `"1"mbit`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseSize(s); err != nil && !strings.Contains(err.Error(), strconv.Quote(s)) {
			t.Fatalf("ParseSize error %q does not quote %q", err, s)
		}
		v, err := ParseRate(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("ParseRate error %q does not quote %q", err, s)
			}
			return
		}
		_ = FormatRate(v)
		_ = New(v).TimeNS(1500)
	})
}
