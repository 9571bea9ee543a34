package htb_test

import (
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

const mbit = 125_000 // bytes per second

// class returns a valid class id under parent at 10mbit.
func class(id, parent uint32) htb.ClassConfig {
	return htb.ClassConfig{ID: id, Parent: parent, Rate: 10 * mbit}
}

// chain returns n classes, 1:1 at the top and each next one under the one
// before: a tree n levels deep.
func chain(n int) []htb.ClassConfig {
	var cs []htb.ClassConfig
	for i := uint32(1); i <= uint32(n); i++ {
		cs = append(cs, class(0x10000|i, 0x10000|(i-1)))
	}
	cs[0].Parent = 0
	return cs
}

// leaf is a leaf qdisc: Validate never calls it.
type leaf struct{ qdisc.Queue }

// funcLeaf is a leaf qdisc of a type that cannot be compared.
type funcLeaf struct {
	qdisc.Queue
	f func()
}

// valid is a tree with every setting given: the internet and the cluster
// under one root.
func valid() htb.Config {
	return htb.Config{
		Handle:  0x10000,
		Default: 0x10020,
		Classes: []htb.ClassConfig{
			{ID: 0x10001, Rate: 1000 * mbit},
			{ID: 0x10010, Parent: 0x10001, Rate: 900 * mbit, Ceil: 1000 * mbit, Burst: 15 << 10, CBurst: 15 << 10, Prio: 0, Quantum: 1514},
			{ID: 0x10020, Parent: 0x10001, Rate: 10 * mbit, Ceil: 10 * mbit, Prio: 7, Overhead: 14, MPU: 64},
		},
		Rules: []classify.Rule{{Dst: netip.MustParsePrefix("10.0.0.0/8"), Class: 0x10010}},
	}
}

// TestValidateAccepts: configurations Linux takes, up to each bound.
func TestValidateAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *htb.Config)
	}{
		{"the example", func(c *htb.Config) {}},
		{"zero config", func(c *htb.Config) { *c = htb.Config{} }},
		{"handle 0 is 1:", func(c *htb.Config) { c.Handle = 0 }},
		{"handle ffff:", func(c *htb.Config) {
			*c = htb.Config{Handle: 0xffff0000, Default: 0xffff0001, Classes: []htb.ClassConfig{class(0xffff0001, 0xffff0000)}}
		}},
		{"parent is the handle", func(c *htb.Config) { c.Classes[0].Parent = 0x10000 }},
		{"ceil below rate (Linux takes it)", func(c *htb.Config) { c.Classes[2].Ceil = mbit }},
		{"8 levels", func(c *htb.Config) { c.Classes = chain(htb.MaxDepth) }},
		{"8 levels, two branches", func(c *htb.Config) {
			c.Classes = append(chain(htb.MaxDepth), class(0x10100, 0x10007), class(0x10101, 0x10001))
		}},
		{"default 0: the direct queue", func(c *htb.Config) { c.Default = 0 }},
		{"default X:0: the direct queue", func(c *htb.Config) { c.Default = 0x10000 }},
		{"default no class (Linux: the direct queue)", func(c *htb.Config) { c.Default = 0x10999 }},
		{"default an inner class (Linux: the direct queue)", func(c *htb.Config) { c.Default = 0x10001 }},
		{"prio 7", func(c *htb.Config) { c.Classes[1].Prio = 7 }},
		{"NoSlack", func(c *htb.Config) { c.Slack = htb.NoSlack }},
		{"slack at its most", func(c *htb.Config) { c.Slack = htb.MaxSlack }},
		{"quantum 0: computed", func(c *htb.Config) { c.Classes[1].Quantum = 0 }},
		{"quantum 1", func(c *htb.Config) { c.Classes[1].Quantum = 1 }},
		{"quantum INT_MAX", func(c *htb.Config) { c.Classes[1].Quantum = math.MaxInt32 }},
		{"quantum and prio on an inner class (Linux keeps them unused)", func(c *htb.Config) {
			c.Classes[0].Quantum, c.Classes[0].Prio = 100, 3
		}},
		{"overhead and mpu 65535", func(c *htb.Config) { c.Classes[1].Overhead, c.Classes[1].MPU = 65535, 65535 }},
		{"r2q, direct_qlen and leaf limit at their largest", func(c *htb.Config) {
			c.R2Q, c.DirectQLen, c.LeafLimit = math.MaxUint32, math.MaxUint32, math.MaxUint32
		}},
		{"rate 6 bytes/s: the default burst, 1600 bytes, lasts 266 s", func(c *htb.Config) { c.Classes[2].Rate, c.Classes[2].Ceil = 6, 6 }},
		{"burst lasting exactly the longest buffer", func(c *htb.Config) {
			// 274877 bytes at 1000 bytes/s last 274.877 s <= 2^32*64 ns.
			c.Classes[1].Rate, c.Classes[1].Burst = 1000, 274877
		}},
		{"burst lasting 1 ns", func(c *htb.Config) { c.Classes[1].Rate, c.Classes[1].Burst = 1e12, 1000 }},
		{"cburst lasting 1 ns", func(c *htb.Config) { c.Classes[1].Ceil, c.Classes[1].CBurst = 1e12, 1000 }},
		{"rate as high as a default burst allows", func(c *htb.Config) {
			// rate/1e9 + 1600 = 2^32-1 bytes.
			c.Classes[2].Rate, c.Classes[2].Ceil = (math.MaxUint32-1600)*1e9, 0
		}},
		{"burst 2^32-1", func(c *htb.Config) { c.Classes[1].Rate, c.Classes[1].Burst = 1e9, math.MaxUint32 }},
		{"leaf qdiscs on leaves", func(c *htb.Config) {
			c.Classes[1].Leaf, c.Classes[2].Leaf = &leaf{}, &leaf{}
		}},
		{"leaf qdiscs that cannot be compared", func(c *htb.Config) {
			c.Classes[1].Leaf, c.Classes[2].Leaf = funcLeaf{}, funcLeaf{}
		}},
		{"leaf qdiscs of a comparable type holding what cannot be compared", func(c *htb.Config) {
			c.Classes[1].Leaf, c.Classes[2].Leaf = leaf{funcLeaf{}}, leaf{funcLeaf{}}
		}},
		{"filter to X:0, the direct queue", func(c *htb.Config) { c.Rules[0].Class = 0x10000 }},
		{"filter to no class (Linux: the default)", func(c *htb.Config) { c.Rules[0].Class = 0x10999 }},
		{"filters at the most", func(c *htb.Config) { c.Rules = make([]classify.Rule, classify.MaxRules) }},
		{"ingress", func(c *htb.Config) { c.Direction = classify.Ingress }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.edit(&c)
			// Rules made with make have class 0: send them to 1:10.
			for i := range c.Rules {
				if c.Rules[i].Class == 0 {
					c.Rules[i].Class = 0x10010
				}
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestValidateRefuses: one row per bound, just past it. The error is a
// *ConfigError naming the class and the setting, and its text says what
// to change.
func TestValidateRefuses(t *testing.T) {
	shared := &leaf{}
	for _, tc := range []struct {
		name  string
		edit  func(c *htb.Config)
		class uint32 // ConfigError.Class
		field string
		want  []string // in the error's text
	}{
		{"handle with a minor", func(c *htb.Config) { c.Handle = 0x10001 }, 0, "handle",
			[]string{"htb handle: handle 1:1 has minor 1", "e.g. 1:"}},
		{"class id 0", func(c *htb.Config) { c.Classes[1].ID = 0 }, 0, "classid",
			[]string{"class 2 of 3", "no classid", "classid 1:10"}},
		{"class minor 0", func(c *htb.Config) { c.Classes[2].ID = 0x10000 }, 0, "classid",
			[]string{"class 3 of 3", "classid 1:0 has minor 0", "minor 1 to ffff"}},
		{"class major 0", func(c *htb.Config) { c.Classes[2].ID = 0x20 }, 0, "classid",
			[]string{"classid 0:20 has major 0", "e.g. 1:20"}},
		{"class of another qdisc", func(c *htb.Config) { c.Classes[2].ID = 0x20020 }, 0x20020, "classid",
			[]string{"htb class 2:20 classid", "not in qdisc 1:", "1:20"}},
		{"class given twice", func(c *htb.Config) { c.Classes[2].ID = 0x10010 }, 0x10010, "classid",
			[]string{"given twice (classes 2 and 3)", "own minor"}},
		{"parent major 0", func(c *htb.Config) { c.Classes[2].Parent = 0x1 }, 0x10020, "parent",
			[]string{"htb class 1:20 parent", "parent 0:1 has major 0", "1:1, or root"}},
		{"parent of another qdisc", func(c *htb.Config) { c.Classes[2].Parent = 0x20001 }, 0x10020, "parent",
			[]string{"parent 2:1 is not in qdisc 1:", "root"}},
		{"parent itself", func(c *htb.Config) { c.Classes[2].Parent = 0x10020 }, 0x10020, "parent",
			[]string{"its own parent"}},
		{"parent after its child", func(c *htb.Config) { c.Classes[1].Parent = 0x10020 }, 0x10010, "parent",
			[]string{"parent 1:20 comes after", "before its children"}},
		{"parent missing", func(c *htb.Config) { c.Classes[2].Parent = 0x10030 }, 0x10020, "parent",
			[]string{"parent 1:30 is no class", "add it before", "root"}},
		{"9 levels", func(c *htb.Config) { c.Classes = chain(htb.MaxDepth + 1) }, 0x10009, "parent",
			[]string{"9 classes deep under parent 1:8", "at most 8 levels", "tree is too deep", "higher up"}},
		{"9 levels on a second branch", func(c *htb.Config) {
			c.Classes = append(chain(htb.MaxDepth), class(0x10100, 0x10006), class(0x10101, 0x10100), class(0x10102, 0x10101))
		}, 0x10102, "parent", []string{"9 classes deep under parent 1:101"}},
		{"rate 0", func(c *htb.Config) { c.Classes[1].Rate = 0 }, 0x10010, "rate",
			[]string{"htb class 1:10 rate: the rate is 0", "above 0", "rate 10mbit"}},
		{"prio 8", func(c *htb.Config) { c.Classes[1].Prio = 8 }, 0x10010, "prio",
			[]string{"prio 8 is above 7", "0 (served first) to 7"}},
		{"quantum past INT_MAX", func(c *htb.Config) { c.Classes[1].Quantum = math.MaxInt32 + 1 }, 0x10010, "quantum",
			[]string{"quantum 2147483648 bytes is above 2147483647", "lower it", "0 to compute it"}},
		{"overhead negative", func(c *htb.Config) { c.Classes[1].Overhead = -1 }, 0x10010, "overhead",
			[]string{"overhead -1", "0 to 65535 bytes"}},
		{"overhead 65536", func(c *htb.Config) { c.Classes[1].Overhead = 65536 }, 0x10010, "overhead",
			[]string{"overhead 65536", "0 to 65535 bytes"}},
		{"mpu 65536", func(c *htb.Config) { c.Classes[1].MPU = 65536 }, 0x10010, "mpu",
			[]string{"mpu 65536", "0 to 65535 bytes"}},
		{"burst lasting past the longest buffer", func(c *htb.Config) { c.Classes[1].Rate, c.Classes[1].Burst = 1000, 274878 }, 0x10010, "burst",
			[]string{"burst 274878 bytes lasts 4m34.878s", "longer than the 4m34.87790688s", "lower burst or raise rate"}},
		{"cburst lasting past the longest buffer", func(c *htb.Config) { c.Classes[1].Ceil, c.Classes[1].CBurst = 1000, 274878 }, 0x10010, "cburst",
			[]string{"cburst 274878 bytes lasts", "lower cburst or raise ceil"}},
		{"the default burst lasting past the longest buffer", func(c *htb.Config) { c.Classes[2].Rate, c.Classes[2].Ceil = 5, 6 }, 0x10020, "burst",
			[]string{"tc's default at rate 40bit: rate/1e9 + 1600 = 1600 bytes", "lasts 5m20s", "lower burst or raise rate"}},
		{"the default cburst lasting past the longest buffer", func(c *htb.Config) { c.Classes[2].Ceil = 5 }, 0x10020, "cburst",
			[]string{"cburst (tc's default at ceil 40bit", "raise ceil"}},
		{"the default cburst at a ceil of 0, the rate", func(c *htb.Config) { c.Classes[2].Rate, c.Classes[2].Ceil, c.Classes[2].Burst = 5, 0, 1000 }, 0x10020, "cburst",
			[]string{"cburst (tc's default at ceil 40bit"}},
		{"burst lasting under 1 ns", func(c *htb.Config) { c.Classes[1].Rate, c.Classes[1].Burst = 1e12, 999 }, 0x10010, "burst",
			[]string{"burst 999 bytes lasts less than 1 ns at rate 8Tbit", "raise burst or lower rate"}},
		{"cburst lasting under 1 ns", func(c *htb.Config) { c.Classes[1].Ceil, c.Classes[1].CBurst = 1e12, 999 }, 0x10010, "cburst",
			[]string{"cburst 999 bytes lasts less than 1 ns at ceil 8Tbit", "raise cburst or lower ceil"}},
		{"rate past what a default burst holds", func(c *htb.Config) {
			c.Classes[2].Rate, c.Classes[2].Ceil = (math.MaxUint32-1600+1)*1e9, 0
		}, 0x10020, "rate", []string{"= 4294967296 bytes) is more than a burst holds", "lower rate"}},
		{"ceil past what a default cburst holds", func(c *htb.Config) { c.Classes[2].Ceil = math.MaxUint64 }, 0x10020, "ceil",
			[]string{"cburst (tc's default at ceil", "lower ceil"}},
		{"rate past any burst", func(c *htb.Config) {
			c.Classes[1].Rate, c.Classes[1].Burst, c.Classes[1].CBurst = math.MaxUint64, math.MaxUint32, math.MaxUint32
		}, 0x10010, "burst", []string{"burst 4294967295 bytes lasts less than 1 ns"}},
		{"leaf qdisc on an inner class", func(c *htb.Config) { c.Classes[0].Leaf = &leaf{} }, 0x10001, "leaf",
			[]string{"htb class 1:1 leaf", "has children (1:10 first)", "on a leaf class"}},
		{"one leaf qdisc on two classes", func(c *htb.Config) { c.Classes[1].Leaf, c.Classes[2].Leaf = shared, shared }, 0x10020, "leaf",
			[]string{"class 1:10's too", "its own qdisc"}},
		{"default of another qdisc", func(c *htb.Config) { c.Default = 0x20020 }, 0, "default",
			[]string{"htb default: default 2:20 is not in qdisc 1:", "e.g. 1:20", "0 for the direct queue"}},
		{"default as a bare minor", func(c *htb.Config) { c.Default = 0x20 }, 0, "default",
			[]string{"default 0:20", "e.g. 1:20"}},
		{"direction", func(c *htb.Config) { c.Direction = 2 }, 0, "direction",
			[]string{"direction 2 is neither egress (0) nor ingress (1)"}},
		{"slack below NoSlack", func(c *htb.Config) { c.Slack = -2 }, 0, "slack",
			[]string{"htb slack: slack -2ns is out of range", "NoSlack, or up to 1s"}},
		{"slack past the most", func(c *htb.Config) { c.Slack = htb.MaxSlack + 1 }, 0, "slack",
			[]string{"slack 1.000000001s is out of range"}},
		{"filters past the most", func(c *htb.Config) { c.Rules = make([]classify.Rule, classify.MaxRules+1) }, 0, "filter",
			[]string{"1025 filters, more than the 1024"}},
		{"filter to another qdisc", func(c *htb.Config) { c.Rules[0].Class = 0x20010 }, 0, "filter",
			[]string{"filter 1 (dst 10.0.0.0/8 classid 2:10) sends packets to 2:10", "class of 1: (or 1: for the direct queue)"}},
		{"filter that never matches", func(c *htb.Config) { c.Rules[0].DstPorts = classify.PortRange{Lo: 80, Hi: 80} }, 0, "filter",
			[]string{"rule 1", "dport needs proto"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.edit(&c)
			for i := range c.Rules {
				if c.Rules[i].Class == 0 {
					c.Rules[i].Class = 0x10010
				}
			}
			err := c.Validate()
			var ce *htb.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate = %v, want a *ConfigError", err)
			}
			if ce.Class != tc.class || ce.Field != tc.field {
				t.Errorf("Validate = class %#x field %q (%v), want class %#x field %q", ce.Class, ce.Field, err, tc.class, tc.field)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestClassValidate: ClassConfig.Validate checks a class alone, and is
// what Config.Validate checks of each.
func TestClassValidate(t *testing.T) {
	for _, tc := range []struct {
		c    htb.ClassConfig
		want string // "" for valid
	}{
		{class(0x10010, 0), ""},
		{class(0x10010, 0x10000), ""},
		{class(0x10010, 0x99999), ""}, // its parent is the tree's business
		{class(0x50010, 0x10001), ""}, // so is its major
		{htb.ClassConfig{ID: 0x10010}, "htb class 1:10 rate: the rate is 0"},
		{htb.ClassConfig{ID: 0x10010, Rate: 1, Prio: 255}, "prio 255 is above 7"},
		{htb.ClassConfig{Rate: 1}, "htb classid: the class has no classid"},
	} {
		err := tc.c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v.Validate() = %v, want %q", tc.c, err, tc.want)
		}
	}
}
