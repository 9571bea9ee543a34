package runscflags_test

import (
	"strings"
	"testing"

	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestWordsChangeInPlace: `runsc qdisc change` of a kind's words changes
// the running qdisc in place by its Kind's Change, whichever kind it is
// (fq's flow limit, netem's delay, cake's bandwidth), and what runs shows
// the new words; a kind with no Change (fifo) is refused naming its flag
// and the restart it needs, and stays as it was.
func TestWordsChangeInPlace(t *testing.T) {
	for _, tc := range []struct {
		start  []string
		change string
		shows  string // what the NIC shows after it, or still shows after a refusal
		says   string // for a refusal, what it says
	}{
		{start: []string{"--qdisc=fq", "--qdisc-fq=flow_limit 100"}, change: "--qdisc-fq=flow_limit 50", shows: "flow_limit 50p"},
		{start: []string{"--qdisc=netem", "--qdisc-netem=delay 100ms"}, change: "--qdisc-netem=delay 50ms", shows: "delay 50ms"},
		{start: []string{"--qdisc=cake", "--qdisc-cake=bandwidth 100mbit"}, change: "--qdisc-cake=bandwidth 50mbit", shows: "bandwidth 50Mbit"},
		{start: []string{"--qdisc=fifo", "--qdisc-fifo=limit 1000"}, change: "--qdisc-fifo=limit 500", shows: "limit 1000p",
			says: "--qdisc-fifo: fifo cannot change in place; restart the sandbox"},
		{start: []string{"--qdisc-ingress=fifo", "--qdisc-ingress-fifo=limit 1000"}, change: "--qdisc-ingress-fifo=limit 500", shows: "limit 1000p",
			says: "--qdisc-ingress-fifo: fifo cannot change in place"},
	} {
		t.Run(tc.change, func(t *testing.T) {
			p := liveNICOf(t, tc.start...)
			_, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{tc.change})
			switch {
			case tc.says == "" && err != nil:
				t.Fatalf("Change(%s): %v", tc.change, err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("Change(%s): %v; want an error saying %q", tc.change, err, tc.says)
			}
			if show := p.Show(); !strings.Contains(show, tc.shows) {
				t.Errorf("Show() after Change(%s):\n%s\nwant it to say %q", tc.change, show, tc.shows)
			}
		})
	}
}
