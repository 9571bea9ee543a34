package runscflags

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// The tests of this file are made from the registry: each runs for
// every registered kind (qdisc.Kinds), so that a kind any package
// registers meets them with no test of its own here.

// kindArgs are the flags that run k in direction d with its Example's
// words, given by its words flag (kindFlagName: --qdisc-tbf's knobs,
// --qdisc-htb's script, --qdisc-fifo's words, ...).
func kindArgs(d Ceiling, k qdisc.Kind) []string {
	sel := FlagQDisc
	if d == IngressCeiling {
		sel = FlagIngressQDisc
	}
	return []string{"--" + sel + "=" + k.Name, "--" + kindFlagName(d, k.Name) + "=" + k.Example}
}

// TestEveryKindBuilds: every registered kind, selected by --qdisc or
// --qdisc-ingress with its Example's words on its words flag, is what
// NewQueueingDiscipline and NewIngress build there, through its Kind.
func TestEveryKindBuilds(t *testing.T) {
	for _, k := range qdisc.Kinds() {
		for _, d := range ceilings {
			args := kindArgs(d, k)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				c, err := parse(t, args...)
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				clock := faketime.NewManualClock()
				link := qdisctest.NewLink(clock)
				if d == EgressCeiling {
					q, err := c.NewQueueingDiscipline(link, clock)
					if err != nil {
						t.Fatalf("NewQueueingDiscipline: %v", err)
					}
					defer q.Close()
					if got := q.(QDisc).Show().Kind; got != k.Name {
						t.Errorf("NewQueueingDiscipline built %s; want %s", got, k.Name)
					}
					return
				}
				e, err := c.NewIngress(link, clock)
				if err != nil {
					t.Fatalf("NewIngress: %v", err)
				}
				defer e.Close()
				if s := e.Show(); len(s.Children) != 1 || s.Children[0].Kind != k.Name {
					t.Errorf("NewIngress built %+v; want %s under ingress", s, k.Name)
				}
			})
		}
	}
}

// TestEveryKindInErrors: a --qdisc, --qdisc-ingress or --qdisc-tbf-child
// that names no kind is refused listing every kind it takes, from the
// registry; every kind that can be a child (Kind.Queue) is taken as
// --qdisc-tbf-child and is what the tbf holds; every kind's words flag
// refuses words the kind does not take, naming the flag or the kind;
// and a registered kind's words given while the direction runs another
// are refused naming the selector to set.
func TestEveryKindInErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"--qdisc=nosuch"}, qdiscChoices()},
		{[]string{"--qdisc-ingress=nosuch"}, append([]string{"none"}, qdisc.KindNames()...)},
		{[]string{"--qdisc-tbf-child=nosuch"}, childKinds()},
	} {
		_, err := parse(t, tc.args...)
		if err == nil {
			t.Errorf("%q was taken; want it refused", tc.args)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%q: %q; want it to name %s", tc.args, err, s)
			}
		}
	}
	if len(childKinds()) == 0 {
		t.Fatal("no registered kind can be a child")
	}
	for _, name := range childKinds() {
		c, err := parse(t, "--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=32kb", "--qdisc-tbf-child="+name)
		if err != nil {
			t.Errorf("--qdisc-tbf-child=%s: %v", name, err)
			continue
		}
		clock := faketime.NewManualClock()
		q, err := c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
		if err != nil {
			t.Errorf("--qdisc-tbf-child=%s: %v", name, err)
			continue
		}
		k, _ := qdisc.Lookup(name)
		o, err := k.Parse("")
		if err != nil {
			t.Fatalf("%s: its defaults: %v", name, err)
		}
		cq, err := k.Queue(o, 1514)
		if err != nil {
			t.Fatalf("%s: its queue: %v", name, err)
		}
		// A kind whose queue is nil is the tbf's own byte FIFO (fifo):
		// no child shows; any other shows as the tbf's child.
		s := q.(QDisc).Show()
		if shown := len(s.Children) == 1 && s.Children[0].Kind == name; shown != (cq != nil) {
			t.Errorf("--qdisc-tbf-child=%s: the tbf shows %+v; want %s shown as its child: %v", name, s, name, cq != nil)
		}
		q.Close()
	}
	for _, k := range qdisc.Kinds() {
		for _, d := range ceilings {
			flag := kindFlagName(d, k.Name)
			args := append(kindArgs(d, k)[:1], "--"+flag+"=nosuchword 1")
			if _, err := parse(t, args...); err == nil || !strings.Contains(err.Error(), flag) && !strings.Contains(err.Error(), k.Name) {
				t.Errorf("%q: %v; want it refused naming --%s or %s", args, err, flag, k.Name)
			}
			if byName[flag] != nil {
				continue // the table's flags: knobs a running qdisc may hold for a later change
			}
			other, sel := "none", "--"+FlagQDisc+"="
			if d == IngressCeiling {
				sel = "--" + FlagIngressQDisc + "="
			}
			args = []string{sel + other, "--" + flag + "=" + k.Example}
			if _, err := parse(t, args...); err == nil || !strings.Contains(err.Error(), sel+k.Name) {
				t.Errorf("%q: %v; want it refused naming %s%s", args, err, sel, k.Name)
			}
		}
	}
}

// TestEveryKindCeiling: `runsc qdisc change` of the ceiling's flags on a
// NIC that runs any registered kind: a tbf changes its own options in
// place; a kind with a Ceiling takes a tbf's buckets over its queue in
// place (fifo and fq_codel show under the tbf); any other is refused
// naming the kind that runs, never as if the NIC had none, and stays as
// it was. A NIC with none is refused saying so.
func TestEveryKindCeiling(t *testing.T) {
	change := []string{"--" + FlagTBFRate + "=1mbit", "--" + FlagTBFBurst + "=10kb"}
	for _, k := range qdisc.Kinds() {
		args := kindArgs(EgressCeiling, k)
		t.Run(k.Name, func(t *testing.T) {
			c, err := parse(t, args...)
			if err != nil {
				t.Fatalf("parse(%q): %v", args, err)
			}
			clock := faketime.NewManualClock()
			link := qdisctest.NewLink(clock)
			q, err := c.NewQueueingDiscipline(link, clock)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			nic := NewNIC("eth0", c, link, clock, q, nil)
			_, err = Change([]*NIC{nic}, change)
			s := q.(QDisc).Show()
			switch {
			case k.Name == ceilingKind:
				if err != nil || !strings.HasPrefix(q.(QDisc).String(), "tbf rate 1Mbit") {
					t.Errorf("Change(%q) on tbf: %v; it runs %q; want its rate changed in place", change, err, q.(QDisc).String())
				}
			case k.Ceiling != nil:
				if err != nil || nic.Config().TBFRate != 125000 {
					t.Errorf("Change(%q) on %s: %v; in force %v; want the ceiling taken", change, k.Name, err, nic.Config())
				}
				// Where the kind shows its ceiling as a tbf over it (fifo,
				// fq_codel), it is over it, not in its place.
				if s.Kind == ceilingKind && (len(s.Children) != 1 || s.Children[0].Kind != k.Name) {
					t.Errorf("Change(%q) on %s: it shows %+v; want %s under the tbf", change, k.Name, s, k.Name)
				}
			default:
				want := "--" + FlagQDisc + "=" + k.Name + " cannot take a ceiling in place"
				if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "no qdisc") {
					t.Errorf("Change(%q) on %s: %v; want an error saying %q", change, k.Name, err, want)
				}
				if s.Kind != k.Name {
					t.Errorf("after the refused change %s shows as %s", k.Name, s.Kind)
				}
			}
		})
	}
	c, err := parse(t, "--qdisc=none")
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	nic := NewNIC("eth0", c, qdisctest.NewLink(clock), clock, nil, nil)
	if _, err := Change([]*NIC{nic}, change); err == nil || !strings.Contains(err.Error(), "no qdisc (--qdisc=none)") {
		t.Errorf("Change(%q) on none: %v; want it refused saying the sandbox has no qdisc", change, err)
	}
}

// TestEveryKindInHelpAndDocs: the help of --qdisc and --qdisc-ingress,
// and docs/flags.md's rows of --qdisc and --qdisc-tbf-child, name every
// registered kind (each kind that can be a child, for the child), with
// its words flag in that direction.
func TestEveryKindInHelpAndDocs(t *testing.T) {
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	RegisterFlags(fs)
	rows := strings.Split(MarkdownTable(), "\n")
	row := func(name string) string {
		i := slices.IndexFunc(rows, func(r string) bool { return strings.HasPrefix(r, "| `--"+name+"` |") })
		if i < 0 {
			t.Fatalf("docs have no row of --%s", name)
		}
		return rows[i]
	}
	for _, k := range qdisc.Kinds() {
		for _, d := range ceilings {
			sel := FlagQDisc
			if d == IngressCeiling {
				sel = FlagIngressQDisc
			}
			help := fs.Lookup(sel).Usage
			if want := k.Name + " (--" + kindFlagName(d, k.Name) + ")"; !strings.Contains(help, want) {
				t.Errorf("--%s help %q does not say %q", sel, help, want)
			}
		}
		if r := row(FlagQDisc); !strings.Contains(r, "`"+k.Name+"`") {
			t.Errorf("docs' --qdisc row %q does not name %s", r, k.Name)
		}
		if r := row(FlagTBFChild); strings.Contains(r, "`"+k.Name+"`") != (k.Queue != nil) {
			t.Errorf("docs' --qdisc-tbf-child row %q names %s: %v; want %v (it can be a child)", r, k.Name, !(k.Queue != nil), k.Queue != nil)
		}
	}
}
