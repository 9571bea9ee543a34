package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// TestBadQDiscNamesEveryKind: an unknown --qdisc is answered with every
// kind the registry has, netem's and any other's.
func TestBadQDiscNamesEveryKind(t *testing.T) {
	var out, errb strings.Builder
	if code := run([]string{"--qdisc=red"}, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, name := range qdisc.KindNames() {
		if !strings.Contains(errb.String(), name) {
			t.Errorf("the error %q does not name the registered %s", errb.String(), name)
		}
	}
}

func TestBadInputExits2BeforeTraffic(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"unknown flag", []string{"--rate=10mbit"}, "flag provided but not defined"},
		{"bad qdisc", []string{"--qdisc=red"}, "choose none, "},
		{"bad rate", []string{"--qdisc-tbf-rate=fast"}, `"fast"`},
		{"tbf without burst", []string{"--qdisc-tbf-burst=0"}, "--qdisc-tbf-burst"},
		{"annotation raising the rate", []string{"--annotation", "dev.gvisor.flag.qdisc-tbf-rate=1gbit"}, "--allow-flag-override"},
		{"annotation leaving tbf", []string{"--annotation", "qdisc=fifo"}, "only tbf"},
		{"annotation without =", []string{"--annotation", "qdisc"}, "key=value"},
		{"bad pace", []string{"--pace=lots"}, "--pace"},
		{"no streams", []string{"--streams=0"}, "--streams"},
		{"stray argument", []string{"extra"}, "unexpected argument"},
		{"chart not svg", []string{"--chart", "out.png"}, "give a .svg file name"},
		{"cri with another mode", []string{"--cri", "--runsc"}, "--cri runs alone: --runsc"},
		{"cri with an annotation", []string{"--cri", "--annotation", "qdisc-tbf-rate=5mbit"}, "--cri runs alone: --annotation"},
		{"cri longer than a stream may run", []string{"--cri", "--duration=3m"}, "at most 2m"},
		{"cri negative send buffer", []string{"--cri", "--cri-sndbuf=-1"}, "--cri-sndbuf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb strings.Builder
			if code := run(tc.args, &out, &errb); code != 2 {
				t.Fatalf("run(%q) = %d, want 2; stderr:\n%s", tc.args, code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.says) {
				t.Errorf("stderr %q does not say %q", errb.String(), tc.says)
			}
			if strings.Contains(out.String(), "on-wire") {
				t.Errorf("traffic ran before the error:\n%s", out.String())
			}
		})
	}
}

// TestCRIWithoutBinaries: --cri without cri/bin's programs exits 2 before
// it starts anything, saying what to build.
func TestCRIWithoutBinaries(t *testing.T) {
	t.Setenv("NETQDISC_CRI_BIN", t.TempDir())
	var out, errb strings.Builder
	if code := run([]string{"--cri"}, &out, &errb); code != 2 {
		t.Fatalf("run(--cri) = %d, want 2; stderr:\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "lacks containerd") || !strings.Contains(errb.String(), "run cri/build.sh") {
		t.Errorf("stderr %q does not say what to build", errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q", out.String())
	}
}

// TestShortRun runs the command briefly with an annotation that lowers the
// rate, and checks its table, JSON and chart. It asserts no speed.
func TestShortRun(t *testing.T) {
	dir := t.TempDir()
	jsonPath, chartPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.svg")
	var out, errb strings.Builder
	args := []string{"--annotation", "qdisc-tbf-rate=20mbit", "--streams=2", "--warmup=200ms", "--duration=1100ms", "--json", jsonPath, "--chart", chartPath}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("run = %d; stderr:\n%s", code, errb.String())
	}
	for _, s := range []string{"tbf rate 20Mbit", "configured rate      20.00 Mbit/s", "on-wire", "RTT loaded", "tc -s qdisc", "Sent ", "backlog"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Runs []struct {
			QDisc   string           `json:"qdisc"`
			Impl    string           `json:"impl"`
			Streams int              `json:"streams"`
			Rate    uint64           `json:"rate_Bps"`
			Wire    float64          `json:"wire_Bps"`
			Rounds  []map[string]any `json:"rounds"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Runs) != 1 || j.Runs[0].QDisc != "tbf" || j.Runs[0].Impl != "netqdisc" || j.Runs[0].Streams != 2 || j.Runs[0].Rate != 2_500_000 || j.Runs[0].Wire == 0 || len(j.Runs[0].Rounds) != 1 {
		t.Errorf("JSON: %s", b)
	}
	if svg, err := os.ReadFile(chartPath); err != nil || !strings.Contains(string(svg), "<svg") {
		t.Errorf("chart: %v", err)
	}
}

// TestRunscTable runs the --runsc comparison briefly on one setting (tbf at
// 10 Mbit/s: light on CPU, as other packages' real-peer tests may run
// meanwhile) and checks the table: both runscs measured, in rows with every
// column. It skips where there is no root or no runsc binaries
// (runsc/build.sh and runsc/build.sh --upstream build them). It asserts no
// speed.
func TestRunscTable(t *testing.T) {
	if err := lab.Check(); err != nil {
		t.Skipf("needs a real-peer lab: %v", err)
	}
	ours, err := lab.RunscBinary(false)
	if err != nil {
		t.Skip(err)
	}
	up, err := lab.RunscBinary(true)
	if err != nil {
		t.Skip(err)
	}
	var out, errb strings.Builder
	cands := []runscCandidate{{name: "upstream runsc", binary: up}, {name: "netqdisc runsc", binary: ours}}
	setting := runscSettings()[1]
	if code := compareRunsc(&out, &errb, cands, []runscSetting{setting}, 1, 2, time.Second, time.Second); code != 0 {
		t.Fatalf("compareRunsc = %d; stderr:\n%s\nstdout:\n%s", code, errb.String(), out.String())
	}
	row := func(cand string) string {
		return regexp.QuoteMeta(setting.label) + `\s+` + cand + `\s+[0-9.]+\s+[0-9.]+ \[[0-9.]+–[0-9.]+\]\s+\S+\s+\S+\s+\d+/\d+\s+[0-9.]+`
	}
	for _, want := range []string{`on-wire/rate\s+RTT idle\s+loaded RTT p50\s+pings lost\s+CPU s/GB`, row("upstream runsc"), row("netqdisc runsc")} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("table does not match %q:\n%s", want, out.String())
		}
	}
	if want := "round 1/1, 2/2: " + setting.label + ", netqdisc runsc"; !strings.Contains(errb.String(), want) {
		t.Errorf("no progress line %q:\n%s", want, errb.String())
	}
}

// TestHTBTable checks --htb's side-by-side rows from made-up results: a
// line per busy class, ours (in process and in runsc) and the kernel's
// shares of the model's, and an error in its cell.
func TestHTBTable(t *testing.T) {
	class := func(id uint32, mbps float64) lab.ClassResult { return lab.ClassResult{Class: id, Bps: mbps * 1e6 / 8} }
	rows := []*htbRow{
		{setting: "90/10", load: "both busy", model: []uint64{90 * 125_000, 10 * 125_000},
			ours:   lab.HTBResult{Classes: []lab.ClassResult{class(lab.ClusterClass, 90), class(lab.InternetClass, 9.9)}},
			runsc:  lab.HTBResult{Classes: []lab.ClassResult{class(lab.ClusterClass, 89.1), class(lab.InternetClass, 10.1)}},
			kernel: lab.HTBResult{Classes: []lab.ClassResult{class(lab.ClusterClass, 89.93), class(lab.InternetClass, 10.23)}}},
		{setting: "90 / 10 ceil 10", load: "internet alone", model: []uint64{10 * 125_000},
			ours:      lab.HTBResult{Classes: []lab.ClassResult{class(lab.InternetClass, 10)}},
			runscErr:  errors.New("no runsc binary"),
			kernelErr: errors.New("tc: no\nhtb")},
	}
	var b strings.Builder
	writeHTBTable(&b, rows)
	for _, want := range []string{
		`setting\s+load\s+class\s+model Mbit/s\s+ours Mbit/s\s+ours/model\s+runsc Mbit/s\s+runsc/model\s+kernel Mbit/s\s+kernel/model`,
		`90/10\s+both busy\s+1:10\s+90.00\s+90.00\s+1.0000\s+89.10\s+0.9900\s+89.93\s+0.9992`,
		`90/10\s+both busy\s+1:20\s+10.00\s+9.90\s+0.9900\s+10.10\s+1.0100\s+10.23\s+1.0230`,
		`90 / 10 ceil 10\s+internet alone\s+1:20\s+10.00\s+10.00\s+1.0000\s+error: no runsc binary\s+–\s+error: tc: no htb\s+–`,
	} {
		if !regexp.MustCompile(want).MatchString(b.String()) {
			t.Errorf("table does not match %q:\n%s", want, b.String())
		}
	}
}
