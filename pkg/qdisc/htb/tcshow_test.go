package htb_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// goldenTC is the transcript of Linux's tc that TestTCShowGolden holds
// htb's show lines to; its head says how it was captured.
const goldenTC = "testdata/tc-show.golden"

// TestTCShowGolden builds each configuration of the golden transcript
// from the same tc words and checks that htb prints what tc printed,
// field for field: `tc qdisc show` (less "root refcnt N", which a
// netstack's qdisc has no counterpart of), `tc -s qdisc show`, and `tc
// class show` with -d and -s (in tc's order of classes, a hash's: the
// lines are compared sorted).
func TestTCShowGolden(t *testing.T) {
	steps, err := qdisctest.ReadTCGolden(goldenTC)
	if err != nil {
		t.Fatal(err)
	}
	var cfg htb.Config
	for _, s := range steps {
		got, want, err := replayHTB(&cfg, s)
		if err != nil {
			t.Fatalf("tc %s: %v", s.Args, err)
		}
		if got != want {
			t.Errorf("tc %s:\nnetqdisc prints\n%s\ntc printed\n%s", s.Args, got, want)
		}
	}
}

// TestTCShowRecapture re-runs the golden transcript with this machine's
// tc, as root, so that the golden strings stay what tc prints.
func TestTCShowRecapture(t *testing.T) {
	steps, err := qdisctest.ReadTCGolden(goldenTC)
	if err != nil {
		t.Fatal(err)
	}
	qdisctest.RecaptureTC(t, steps)
}

// replayHTB applies one step of a transcript to cfg, or, for a show,
// returns what htb prints and what tc printed, in comparable form.
func replayHTB(cfg *htb.Config, s qdisctest.TCStep) (got, want string, err error) {
	const dev = " dev veth0 "
	switch {
	case strings.HasPrefix(s.Args, "qdisc add"+dev+"root "):
		*cfg, err = htb.ParseQdisc(strings.TrimPrefix(s.Args, "qdisc add"+dev))
		return "", "", err
	case strings.HasPrefix(s.Args, "class add"+dev):
		c, err := htb.ParseClass(strings.TrimPrefix(s.Args, "class add"+dev))
		cfg.Classes = append(cfg.Classes, c)
		return "", "", err
	case strings.HasPrefix(s.Args, "qdisc del"+dev):
		*cfg = htb.Config{}
		return "", "", nil
	}
	tr, err := htb.NewTree(*cfg, nil, 0)
	if err != nil {
		return "", "", err
	}
	classes := tr.Classes()
	each := func(f func(htb.ClassStats) string) []string {
		var out []string
		for _, c := range classes {
			out = append(out, f(c))
		}
		return out
	}
	sorted := func(parts []string) string {
		slices.Sort(parts)
		return strings.Join(parts, "\n")
	}
	switch strings.TrimSuffix(s.Args, dev[:len(dev)-1]) {
	case "qdisc show":
		return "qdisc " + cfg.String(), qdisctest.TCQdiscLine(s.Out), nil
	case "-d qdisc show":
		return "qdisc " + cfg.Detailed(), qdisctest.TCQdiscLine(s.Out), nil
	case "-s qdisc show":
		line, stats, _ := strings.Cut(s.Out, "\n")
		return "qdisc " + cfg.String() + "\n " + qdisc.Stats{}.String(), qdisctest.TCQdiscLine(line) + "\n" + stats, nil
	case "class show":
		return sorted(each(func(c htb.ClassStats) string { return c.Line(false) })), sorted(strings.Split(s.Out, "\n")), nil
	case "-d class show":
		return sorted(each(func(c htb.ClassStats) string { return c.Line(true) })), sorted(strings.Split(s.Out, "\n")), nil
	case "-s class show":
		return sorted(each(htb.ClassStats.String)), sorted(strings.Split(s.Out, "\n\n")), nil
	}
	return "", "", fmt.Errorf("no replay for this command; add one to replayHTB")
}
