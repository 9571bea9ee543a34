package lab

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

func TestKernelHTBCommands(t *testing.T) {
	cfg := htb.Config{
		Default: InternetClass,
		Classes: []htb.ClassConfig{
			{ID: 1<<16 | 1, Rate: 100 * mbit},
			{ID: ClusterClass, Parent: 1<<16 | 1, Rate: 90 * mbit, Ceil: 100 * mbit},
			{ID: InternetClass, Parent: 1<<16 | 1, Rate: 10 * mbit, Ceil: 10 * mbit, Burst: 15000, Prio: 1, Quantum: 1514},
		},
		Rules: []classify.Rule{{Dst: netip.MustParsePrefix("10.77.1.0/24"), Class: ClusterClass}},
	}
	got, err := KernelHTBCommands("vethK", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"tc qdisc replace dev vethK root handle 1: htb default 20",
		"tc class add dev vethK parent 1: classid 1:1 htb rate 100000000bit prio 0",
		"tc class add dev vethK parent 1:1 classid 1:10 htb rate 90000000bit ceil 100000000bit prio 0",
		"tc class add dev vethK parent 1:1 classid 1:20 htb rate 10000000bit ceil 10000000bit burst 15000 quantum 1514 prio 1",
		"tc filter add dev vethK parent 1: protocol ip prio 1 u32 match ip dst 10.78.1.0/24 flowid 1:10",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d commands, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if g := strings.Join(got[i], " "); g != want[i] {
			t.Errorf("command %d: %q, want %q", i, g, want[i])
		}
	}
}

func TestKernelHTBCommandsRefuses(t *testing.T) {
	root := htb.ClassConfig{ID: 1<<16 | 1, Rate: mbit}
	for _, tc := range []struct {
		name string
		cfg  htb.Config
		says string
	}{
		{"quota", htb.Config{Classes: []htb.ClassConfig{{ID: 1<<16 | 1, Rate: mbit, Quota: &htb.Quota{Bytes: 1, Period: 1}}}}, "no quota"},
		{"leaf limit", htb.Config{LeafLimit: 10, Classes: []htb.ClassConfig{root}}, "leaf limit"},
		{"rule by port", htb.Config{Classes: []htb.ClassConfig{root}, Rules: []classify.Rule{{Proto: 6, DstPorts: classify.PortRange{Lo: 80, Hi: 80}, Class: root.ID}}}, "IPv4 destination"},
		{"rule by IPv6", htb.Config{Classes: []htb.ClassConfig{root}, Rules: []classify.Rule{{Dst: netip.MustParsePrefix("fd00::/8"), Class: root.ID}}}, "IPv4 destination"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := KernelHTBCommands("d", tc.cfg); err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err %v; want one that says %q", err, tc.says)
			}
		})
	}
}

func TestParseClassBytes(t *testing.T) {
	const out = `class htb 1:1 root rate 100Mbit ceil 100Mbit burst 1600b cburst 1600b 
 Sent 125000000 bytes 82563 pkt (dropped 0, overlimits 0 requeues 0) 
 backlog 0b 0p requeues 0
 lended: 0 borrowed: 0 giants: 0
 tokens: 2000 ctokens: 2000

class htb 1:10 parent 1:1 prio 0 rate 90Mbit ceil 100Mbit burst 1597b cburst 1600b 
 Sent 112500000 bytes 74300 pkt (dropped 12, overlimits 40 requeues 0) 
 backlog 0b 0p requeues 0
 lended: 74300 borrowed: 0 giants: 0
 tokens: 2000 ctokens: 2000

class htb 1:20 parent 1:1 prio 1 rate 10Mbit ceil 100Mbit burst 1600b cburst 1600b 
 Sent 12500000 bytes 8263 pkt (dropped 0, overlimits 0 requeues 0) 
`
	got, err := parseClassBytes(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint32]uint64{1<<16 | 1: 125000000, ClusterClass: 112500000, InternetClass: 12500000}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for id, b := range want {
		if got[id] != b {
			t.Errorf("class %s: %d bytes, want %d", classify.ClassID(id), got[id], b)
		}
	}
	for _, bad := range []string{"", "class htb 1:zz root\n Sent 1 bytes 1 pkt", "class htb 1:1 root\n Sent many bytes 1 pkt"} {
		if _, err := parseClassBytes(bad); err == nil {
			t.Errorf("parseClassBytes(%q): no error", bad)
		}
	}
}

func TestSettingsScriptsParse(t *testing.T) {
	for _, s := range HTBSettings {
		for _, extra := range []string{"", "quota 20mb per 1h then 1mbit"} {
			cfg, err := FromFlags(s.Flags(extra), nil)
			if err != nil {
				t.Fatalf("%s %q: %v", s.Label, extra, err)
			}
			hc, err := cfg.HTBConfig()
			if err != nil {
				t.Fatal(err)
			}
			if len(hc.Classes) != 3 || hc.Default != InternetClass || len(hc.Rules) != 1 || hc.Rules[0].Class != ClusterClass {
				t.Errorf("%s: %+v", s.Label, hc)
			}
			if _, err := KernelHTBCommands("d", hc); (err == nil) != (extra == "") {
				t.Errorf("%s %q: the kernel's commands: %v", s.Label, extra, err)
			}
		}
	}
}

func TestKernelSide(t *testing.T) {
	for in, want := range map[string]string{"10.77.1.2": "10.78.1.2", "10.77.0.0": "10.78.0.0", "10.1.2.3": "10.1.2.3", "fd00::1": "fd00::1"} {
		if got := kernelSide(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("kernelSide(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestCheckLoads(t *testing.T) {
	for _, tc := range []struct {
		loads []ClassLoad
		ok    bool
	}{
		{Loads(true, true, 4), true},
		{nil, false},
		{[]ClassLoad{{ClusterClass, "cluster", 4}}, false},
		{[]ClassLoad{{ClusterClass, "fd00::1", 4}}, false},
		{[]ClassLoad{{ClusterClass, PeerClusterAddr, 0}}, false},
	} {
		if err := checkLoads(tc.loads); (err == nil) != tc.ok {
			t.Errorf("checkLoads(%v) = %v; want ok %v", tc.loads, err, tc.ok)
		}
	}
}
