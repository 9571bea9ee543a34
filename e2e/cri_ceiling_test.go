package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestCRIBandwidthAboveTheCeiling: a pod whose kubernetes.io/egress-bandwidth
// (200M) is above the operator's ceiling (100mbit in runsc.toml) starts, as
// under the CNI bandwidth plugin: Kubernetes' annotation is a limit, not a
// reservation, so the pod gets the stricter of the two, the operator's
// tbf, and the boot log says so. What the pod sends is held to the
// ceiling: at most 1.01 of 100 Mbit/s from the first byte. (A
// dev.gvisor.flag.* above the ceiling is still refused: TestCRIRefusal.)
func TestCRIBandwidthAboveTheCeiling(t *testing.T) {
	c := newCRI(t)
	p := &lab.Pod{Name: "above", RuntimeHandler: "runsc", Annotations: map[string]string{runscflags.AnnotationKubeEgress: "200M"}}
	r, id := criSend(t, c, p, 4*time.Second)
	ratio := r.GoodputBps / 100e6
	t.Logf("goodput %.2f Mbit/s (%d bytes in %.3f s from the first byte): %.4f of the operator's 100 Mbit/s", r.GoodputBps/1e6, r.Bytes, r.Seconds, ratio)
	if ratio > 1.01 {
		t.Errorf("the pod sent %.4f of the operator's 100 Mbit/s ceiling; want at most 1.01", ratio)
	}
	log, err := c.RunscLog("runsc", id, "boot")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`Enabling qdisc on [^\n]*`).FindString(log)
	t.Logf("boot log: %s", line)
	if !strings.Contains(line, "tbf rate 100Mbit") {
		t.Errorf("the boot log does not name the operator's tbf (rate 100Mbit): %q", line)
	}
	notice := `annotation kubernetes.io/egress-bandwidth="200M": 25000000 bytes/s (200Mbit) is above the operator's ceiling --qdisc-tbf-rate=12500000 bytes/s (100Mbit); the pod gets the ceiling`
	if !strings.Contains(log, notice) {
		t.Errorf("the boot log does not say %q", notice)
	}
}
