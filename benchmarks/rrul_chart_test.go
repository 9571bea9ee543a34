package benchmarks

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
)

// TestWriteRRULChart: an RRUL run is three panels, upload and download
// with a line a stream and the ping's RTT, each point at its time from the
// run's start (a stream's sample after the idle period).
func TestWriteRRULChart(t *testing.T) {
	r := lab.RRULResult{
		Options: lab.RRULOptions{Streams: 2, Idle: time.Second, Load: 2 * time.Second, Sample: time.Second},
		Up:      [][]float64{{9e6, 10e6}, {11e6, 10e6}},
		Down:    [][]float64{{5e6, 5e6}, {15e6, 15e6}},
		Pings:   []lab.RRULPing{{At: 0, RTT: time.Millisecond}, {At: 2 * time.Second, RTT: 40 * time.Millisecond}, {At: 3 * time.Second, RTT: 0}},
	}
	var b bytes.Buffer
	if err := WriteRRULChart(&b, "fq", r); err != nil {
		t.Fatal(err)
	}
	svg := parseSVG(t, b.Bytes())
	panels := svg.all("g", "panel")
	var titles []string
	for _, p := range panels {
		titles = append(titles, texts(p.all("text", "title"))...)
	}
	if want := []string{"fq: upload", "fq: download", "fq: ping"}; !slices.Equal(titles, want) {
		t.Fatalf("panels %q, want %q", titles, want)
	}
	for i, want := range []int{2, 2, 1} {
		lines := panels[i].all("polyline", "series")
		if len(lines) != want {
			t.Errorf("%s: %d lines, want %d", titles[i], len(lines), want)
			continue
		}
		for _, l := range lines {
			if n := len(coords(t, l.attr["points"])); n != map[int]int{0: 2, 1: 2, 2: 3}[i] {
				t.Errorf("%s: a line of %d points, want every sample or ping", titles[i], n)
			}
		}
	}
}
