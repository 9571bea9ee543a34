package benchmarks

import (
	"io"
	"math"
	"time"

	"github.com/netqdisc/netqdisc/lab"
)

// WriteRRULChart draws an RRUL run (lab.MeasureSandboxRRUL) as Flent
// draws one and seed 002 shows it: each upload stream's goodput, each
// download stream's, and the ping's RTT (log scale), over the run's time,
// three panels side by side. title names the configuration.
func WriteRRULChart(w io.Writer, title string, r lab.RRULResult) error {
	at := func(i int) float64 { // a sample's end, from the run's start
		return (r.Options.Idle + time.Duration(i+1)*r.Options.Sample).Seconds()
	}
	streams := func(name string, rates [][]float64) chartPanel {
		p := chartPanel{
			Title: title + ": " + name,
			X:     chartAxis{Label: "seconds", FromZero: true},
			Y:     chartAxis{Label: "goodput per stream, Mbit/s", FromZero: true},
		}
		for i, s := range rates {
			var pts []xy
			for j, v := range s {
				pts = append(pts, xy{X: at(j), Y: v / 1e6})
			}
			p.Series = append(p.Series, chartSeries{Points: pts, Colour: i})
		}
		return p
	}
	ping := chartPanel{
		Title: title + ": ping",
		X:     chartAxis{Label: "seconds", FromZero: true},
		Y:     chartAxis{Label: "RTT, ms (log scale)", Log: true},
	}
	var pts []xy
	for _, p := range r.Pings {
		// A log axis has no 0: an RTT under 10 µs is drawn at 0.01 ms.
		pts = append(pts, xy{X: p.At.Seconds(), Y: math.Max(float64(p.RTT)/float64(time.Millisecond), 0.01)})
	}
	ping.Series = []chartSeries{{Points: pts}}
	return writeSVG(w, []chartPanel{streams("upload", r.Up), streams("download", r.Down), ping})
}
