package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// criMetricServer is the runsc handler's metric-server in
// TestCRIExportMetrics: runsc replaces %RUNTIME_ROOT% with its root. With
// it, runsc create registers the sandbox's metrics; nothing needs to
// listen there for export-metrics (a metric server from a gVisor release,
// which the module cannot build, would serve the same metrics).
const criMetricServer = "%RUNTIME_ROOT%/metrics.sock"

// TestCRIExportMetrics: `runsc export-metrics` of a pod run through the
// CRI shows netqdisc's counters. The runsc handler's runsc.toml adds
// criMetricServer to the operator's flags. A pod with egress-bandwidth 10M
// and ingress-bandwidth 20M sends for 3 s, then receives for 3 s; then
// runsc --root <Dir>/runsc/runsc/k8s.io (the shim's root is runsc.toml's
// root and containerd's namespace) export-metrics <pod ID> shows
// runsc_network_qdisc_{sent_bytes,sent_packets,overlimits} and
// runsc_network_ingress_{sent_bytes,sent_packets,overlimits} above 0 (the
// export leaves out zeros), each sent_bytes at least what its sink counted.
func TestCRIExportMetrics(t *testing.T) {
	c := newCRI(t, func(o *lab.CRIOptions) {
		cfg := map[string]string{"metric-server": criMetricServer}
		for k, v := range lab.CRIOperator {
			cfg[k] = v
		}
		r := o.Runsc["runsc"]
		r.Config = cfg
		o.Runsc["runsc"] = r
	})
	runsc, err := lab.RunscBinary(false)
	if err != nil {
		t.Fatal(err)
	}
	p := &lab.Pod{Name: "metrics", RuntimeHandler: "runsc", Annotations: map[string]string{
		runscflags.AnnotationKubeEgress: "10M", runscflags.AnnotationKubeIngress: "20M",
	}}
	id, err := c.RunPod(p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.RemovePod(id); err != nil {
			t.Error(err)
		}
	}()
	sunk := map[string]int64{}
	for _, s := range []struct {
		dir     string
		ingress bool
		args    []string
	}{{"qdisc", false, []string{"-sndbuf", "16384"}}, {"ingress", true, nil}} {
		r, err := c.Stream(lab.CRIStream{PodID: id, Pod: p, Ingress: s.ingress, For: 3 * time.Second, SenderArgs: s.args})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the sink counted %d bytes, %.3f Mbit/s from the first byte; ping under load p50 %v", s.dir, r.Bytes, r.GoodputBps/1e6, r.RTT(0.5))
		sunk[s.dir] = r.Bytes
	}
	root := filepath.Join(c.Dir, "runsc", "runsc", "k8s.io")
	out, err := lab.RunBounded(exec.Command(runsc, "--root", root, "--metric-server="+criMetricServer, "export-metrics", id), 30*time.Second)
	if err != nil {
		t.Fatalf("runsc --root %s export-metrics %s: %v: %s", root, id, err, out)
	}
	values := map[string]uint64{}
	for _, m := range regexp.MustCompile(`(?m)^runsc_network_((?:qdisc|ingress)_\w+)\{[^}]*\} (\d+)`).FindAllStringSubmatch(out, -1) {
		values[m[1]], _ = strconv.ParseUint(m[2], 10, 64)
	}
	t.Logf("runsc export-metrics: %v", values)
	for dir, bytes := range sunk {
		for _, name := range []string{"sent_bytes", "sent_packets", "overlimits"} {
			if values[dir+"_"+name] == 0 {
				t.Errorf("runsc export-metrics has no runsc_network_%s_%s above 0:\n%s", dir, name, lab.LastLines(out, 40))
			}
		}
		if got := values[dir+"_sent_bytes"]; got < uint64(bytes) {
			t.Errorf("runsc_network_%s_sent_bytes %d; the sink counted %d bytes of payload alone", dir, got, bytes)
		}
	}
}
