package tbf_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// goldenTC is the transcript of Linux's tc that TestTCShowGolden holds
// tbf's show lines to; its head says how it was captured.
const goldenTC = "testdata/tc-show.golden"

// TestTCShowGolden reads each tbf of the golden transcript from the same
// tc words (Parse), checks it is valid (Check), and checks that it prints
// what tc printed, field for field: `tc qdisc show` and `tc -d qdisc
// show` (less "1: root refcnt N": a netstack's qdisc has no handle nor
// reference count) and `tc -s qdisc show`.
func TestTCShowGolden(t *testing.T) {
	steps, err := qdisctest.ReadTCGolden(goldenTC)
	if err != nil {
		t.Fatal(err)
	}
	var cfg tbf.Config
	for _, s := range steps {
		got, want, err := replayTBF(&cfg, s)
		if err != nil {
			t.Fatalf("tc %s: %v", s.Args, err)
		}
		if got != want {
			t.Errorf("tc %s (tbf %+v):\nnetqdisc prints\n%s\ntc printed\n%s", s.Args, cfg, got, want)
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

// replayTBF applies one step of a transcript to cfg, or, for a show,
// returns what tbf prints and what tc printed, in comparable form.
func replayTBF(cfg *tbf.Config, s qdisctest.TCStep) (got, want string, err error) {
	const dev = " dev veth0"
	tcLine := func(line string) string {
		return strings.Replace(qdisctest.TCQdiscLine(line), "qdisc tbf 1: ", "qdisc tbf ", 1)
	}
	switch {
	case strings.HasPrefix(s.Args, "qdisc add"+dev+" "):
		if *cfg, err = tbf.Parse(strings.TrimPrefix(s.Args, "qdisc add"+dev+" ")); err != nil {
			return "", "", err
		}
		return "", "", cfg.Check()
	case strings.HasPrefix(s.Args, "qdisc del"+dev):
		*cfg = tbf.Config{}
		return "", "", nil
	case s.Args == "qdisc show"+dev:
		return "qdisc " + cfg.String(), tcLine(s.Out), nil
	case s.Args == "-d qdisc show"+dev:
		return "qdisc " + cfg.Detailed(), tcLine(s.Out), nil
	case s.Args == "-s qdisc show"+dev:
		line, stats, _ := strings.Cut(s.Out, "\n")
		return "qdisc " + cfg.String() + "\n " + qdisc.Stats{}.String(), tcLine(line) + "\n" + stats, nil
	}
	return "", "", fmt.Errorf("no replay for this command; add one to replayTBF")
}
