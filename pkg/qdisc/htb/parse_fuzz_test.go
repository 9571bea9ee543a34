package htb_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// fuzzLines bounds the lines one input parses, so that each runs fast.
const fuzzLines = 32

// FuzzParseHTB reads its input as a configuration in tc's words: the first
// line the qdisc (ParseQdisc), each next line a class (ParseClass), or a
// filter if it starts with "filter" (ParseFilter: the root chain's, or with
// parent a class's). It checks what a user of the parsers relies on:
//   - no input panics, in the parsers or in Validate of what they built;
//   - an error names htb (or classify, for a filter);
//   - what parses is valid: a class passes ClassConfig.Validate, a qdisc
//     Config.Validate;
//   - a class's String parses back to the same class, a filter's
//     FilterString to the same filter, and the qdisc's words to the same
//     qdisc;
//   - the whole input, as one class, parses or is refused without panic.
//
// Then it validates the tree the lines make, which may be anything:
// classes of other qdiscs, parents missing or later, trees too deep,
// chains on no class, chains that loop; and, for a tree Validate takes,
// classifies hostile packets drawn from the input through its chains: each
// goes to a leaf or the direct queue, without a panic or a loop.
func FuzzParseHTB(f *testing.F) {
	for _, s := range []string{
		"handle 1: htb default 20 r2q 10 direct_qlen 100\n" +
			"parent 1: classid 1:1 htb rate 1gbit\n" +
			"parent 1:1 classid 1:10 htb rate 900mbit ceil 1gbit prio 0\n" +
			"parent 1:1 classid 1:20 htb rate 10mbit ceil 10mbit burst 15k cburst 15k prio 1 quantum 1514 overhead 14 mpu 64\n" +
			"filter dst 10.0.0.0/8 classid 1:10",
		"\nroot classid 1:1 rate 1gbit\nparent 1:1 classid 1:10 rate 1mbit\nparent 1:10 classid 1:11 rate 1mbit\nparent 1:10 classid 1:12 rate 1mbit\n" +
			"filter classid 1:10\nfilter parent 1:10 dst 10.0.0.0/8 proto tcp dport 443 classid 1:11\nfilter parent 1:10 classid 1:12",
		"\nroot classid 1:1 rate 1gbit\nparent 1:1 classid 1:10 rate 1mbit\nparent 1:10 classid 1:11 rate 1mbit\nparent 1:1 classid 1:20 rate 1mbit\nparent 1:20 classid 1:21 rate 1mbit\n" +
			"filter classid 1:10\nfilter parent 1:10 dst 10.0.0.0/8 classid 1:20\nfilter parent 1:20 src 10.0.0.0/8 classid 1:10\nfilter parent 1:99 classid 1:1",
		"htb\nroot classid 1:1 rate 8\nparent 1:1 classid 1:2 rate 1000000 mtu 9000",
		"handle 2:\nparent 2:1 classid 2:1 rate 1mbit",
		"parent 1:1 classid 1:10 rate 10tbit buffer 1514/8 cbuffer 1mb linklayer ethernet",
		"\nroot classid 1:1 rate 1mbit\nparent 1:1 classid 1:2 rate 1mbit\nparent 1:2 classid 1:3 rate 1mbit\n" +
			"parent 1:3 classid 1:4 rate 1mbit\nparent 1:4 classid 1:5 rate 1mbit\nparent 1:5 classid 1:6 rate 1mbit\n" +
			"parent 1:6 classid 1:7 rate 1mbit\nparent 1:7 classid 1:8 rate 1mbit\nparent 1:8 classid 1:9 rate 1mbit",
		"default 0x1a handle ffff:0\nparent ffff: classid ffff:1a rate 1.5mbit ceil 0 prio 7 quantum 2147483647",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := htb.ParseClass(s); err != nil && !strings.Contains(err.Error(), "htb") {
			t.Errorf("ParseClass(%q) = %v, an error that does not name htb", s, err)
		}
		lines := strings.SplitN(s, "\n", fuzzLines+1)
		if len(lines) > fuzzLines {
			lines = lines[:fuzzLines]
		}
		cfg, err := htb.ParseQdisc(lines[0])
		switch {
		case err != nil && !strings.Contains(err.Error(), "htb"):
			t.Errorf("ParseQdisc(%q) = %v, an error that does not name htb", lines[0], err)
		case err != nil:
			cfg = htb.Config{}
		default:
			if err := cfg.Validate(); err != nil {
				t.Errorf("ParseQdisc(%q) = %+v, which Validate refuses: %v", lines[0], cfg, err)
			}
			again, err := htb.ParseQdisc(qdiscWords(cfg))
			if err != nil || !cmp.Equal(again, cfg, cmpopts.EquateEmpty()) {
				t.Errorf("ParseQdisc(%q) = %+v, %v; want %+v back", qdiscWords(cfg), again, err, cfg)
			}
		}
		for _, line := range lines[1:] {
			if rest, ok := strings.CutPrefix(line, "filter"); ok {
				parent, r, err := htb.ParseFilter(rest)
				if err != nil {
					continue
				}
				p2, r2, err := htb.ParseFilter(htb.FilterString(parent, r))
				if err != nil || p2 != parent || r2 != r {
					t.Errorf("ParseFilter(%q) = %x %v, %v; want %x %v back (from %q)", htb.FilterString(parent, r), p2, r2, err, parent, r, line)
				}
				if parent == 0 {
					cfg.Rules = append(cfg.Rules, r)
					continue
				}
				if cfg.Chains == nil {
					cfg.Chains = map[uint32][]classify.Rule{}
				}
				cfg.Chains[parent] = append(cfg.Chains[parent], r)
				continue
			}
			c, err := htb.ParseClass(line)
			if err != nil {
				if !strings.Contains(err.Error(), "htb") {
					t.Errorf("ParseClass(%q) = %v, an error that does not name htb", line, err)
				}
				continue
			}
			if err := c.Validate(); err != nil {
				t.Errorf("ParseClass(%q) = %+v, which Validate refuses: %v", line, c, err)
			}
			again, err := htb.ParseClass(c.String())
			if err != nil || !cmp.Equal(again, c) {
				t.Errorf("ParseClass(%q) = %+v, %v; want %+v back (from %q)", c.String(), again, err, c, line)
			}
			cfg.Classes = append(cfg.Classes, c)
		}
		switch err := cfg.Validate(); {
		case err != nil && !strings.HasPrefix(err.Error(), "htb "):
			t.Errorf("Validate = %v, an error that does not name htb", err)
		case err == nil:
			checkTree(t, cfg)
			checkClassify(t, cfg, []byte(s))
		}
	})
}

// checkClassify builds the tree cfg describes and classifies a few hostile
// packets drawn from data: each goes to a leaf of cfg, or to the direct
// queue (the qdisc's handle).
func checkClassify(t *testing.T, cfg htb.Config, data []byte) {
	t.Helper()
	tr, err := htb.NewTree(cfg, nil, 0)
	if err != nil {
		t.Fatalf("NewTree refused what Validate took: %v", err)
	}
	handle := max(cfg.Handle, 1<<16)
	inner := map[uint32]bool{}
	for _, c := range cfg.Classes {
		inner[c.Parent] = true
	}
	src := qdisctest.NewInput(data)
	for range 4 {
		pkt := qdisctest.HostilePacket(src, qdisctest.HostileSize(src)%256)
		id := tr.ClassOf(pkt)
		pkt.DecRef()
		if id != handle && (classIndexOf(cfg.Classes, id) < 0 || inner[id]) {
			t.Fatalf("ClassOf = %s, neither a leaf nor the direct queue", classify.ClassID(id))
		}
	}
}

func classIndexOf(classes []htb.ClassConfig, id uint32) int {
	for i, c := range classes {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// checkTree checks what Validate promises of a tree it takes: classids of
// the qdisc's major, each once, each parent listed before its children,
// at most MaxDepth levels.
func checkTree(t *testing.T, cfg htb.Config) {
	t.Helper()
	major := max(cfg.Handle>>16, 1)
	depth := map[uint32]int{0: 0, major << 16: 0}
	for _, c := range cfg.Classes {
		d, ok := depth[c.Parent]
		switch _, dup := depth[c.ID]; {
		case c.ID>>16 != major || c.ID&0xffff == 0:
			t.Errorf("Validate took class %s in qdisc %x:", classify.ClassID(c.ID), major)
		case dup:
			t.Errorf("Validate took class %s twice", classify.ClassID(c.ID))
		case !ok:
			t.Errorf("Validate took class %s before its parent %s", classify.ClassID(c.ID), classify.ClassID(c.Parent))
		case d+1 > htb.MaxDepth:
			t.Errorf("Validate took class %s at depth %d", classify.ClassID(c.ID), d+1)
		}
		depth[c.ID] = d + 1
	}
}
