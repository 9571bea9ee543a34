package runscflags_test

import (
	"os"
	"strings"
	"testing"

	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestNetemChosenByPod: a pod's author may run a chaos experiment on the
// pod alone: --qdisc=netem in place of the operator's fifo or none, with
// words held to netem's defaults by its Tighten (more delay, loss or
// corruption; nothing that sends more, such as duplication; no larger
// limit); never in place of the operator's tbf, htb or cake, which
// would lift their ceilings.
func TestNetemChosenByPod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		operator []string
		pod      map[string]string
		want     string // the netem words in force; "" with says
		says     string
	}{
		{"over fifo", []string{"--qdisc=fifo"}, map[string]string{"qdisc": "netem", "qdisc-netem": "delay 100ms 10ms loss 1%"}, "delay 100000000ns 10000000ns loss random 1%", ""},
		{"over none", []string{"--qdisc=none"}, map[string]string{"qdisc": "netem", "qdisc-netem": "corrupt 1%"}, "corrupt 1% 0%", ""},
		{"no words", []string{"--qdisc=fifo"}, map[string]string{"qdisc": "netem"}, "", ""},
		{"duplication sends more", []string{"--qdisc=fifo"}, map[string]string{"qdisc": "netem", "qdisc-netem": "duplicate 10%"}, "", "duplicate"},
		{"a larger limit", []string{"--qdisc=fifo"}, map[string]string{"qdisc": "netem", "qdisc-netem": "limit 100000 delay 10ms"}, "", "limit"},
		{"over tbf", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}, map[string]string{"qdisc": "netem"}, "", "in place of none, fifo or netem"},
		{"words without choosing it", []string{"--qdisc=fifo"}, map[string]string{"qdisc-netem": "delay 100ms"}, "", "does not run netem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := fromArgs(tc.operator...)
			if err != nil {
				t.Fatal(err)
			}
			annotations := map[string]string{}
			for k, v := range tc.pod {
				annotations[runscflags.AnnotationPrefix+k] = v
			}
			err = c.ApplyAnnotations(annotations)
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%v, want a refusal saying %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.QDisc.String(); got != "netem" {
				t.Errorf("--qdisc=%s in force, want netem", got)
			}
			if got := c.Words["qdisc-netem"]; got != tc.want {
				t.Errorf("--qdisc-netem in force %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNetemPodNamesNoFile: a pod's netem words that name a table file
// are refused before the file is opened (the runtime reads the host's
// files for the operator, never for a pod: a table's parse errors would
// show what a file holds), whether the operator runs netem or the pod
// chose it; the generated tables are a pod's to name.
func TestNetemPodNamesNoFile(t *testing.T) {
	secret := t.TempDir() + "/secret"
	if err := os.WriteFile(secret, []byte("root:x:0:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, operator := range [][]string{{"--qdisc=netem", "--qdisc-netem=delay 50ms 10ms"}, {"--qdisc=fifo"}} {
		for _, words := range []string{"delay 60ms 10ms distribution " + secret, "delay 60ms 10ms distribution ../../../tmp/x", "slot distribution " + secret + " 10ms 1ms"} {
			c, err := fromArgs(operator...)
			if err != nil {
				t.Fatal(err)
			}
			pod := map[string]string{runscflags.AnnotationPrefix + "qdisc": "netem", runscflags.AnnotationPrefix + "qdisc-netem": words}
			err = c.ApplyAnnotations(pod)
			if err == nil || !strings.Contains(err.Error(), "may name no table file") {
				t.Errorf("operator %v, pod %q: %v; want a refusal that names no file's content", operator, words, err)
			}
			if err != nil && strings.Contains(err.Error(), "root:x") {
				t.Errorf("the refusal shows the file: %v", err)
			}
		}
	}
	c, err := fromArgs("--qdisc=netem", "--qdisc-netem=delay 50ms 10ms distribution normal")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyAnnotations(map[string]string{runscflags.AnnotationPrefix + "qdisc-netem": "delay 60ms 10ms distribution normal"}); err != nil {
		t.Errorf("a pod naming the generated normal table: %v", err)
	}
}
