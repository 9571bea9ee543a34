package benchmarks

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// node is an element of a parsed SVG document.
type node struct {
	name string
	attr map[string]string
	text string
	kids []*node
}

// parseSVG walks data with encoding/xml's decoder, as a browser's parser
// would reject what it rejects, and returns the root element.
func parseSVG(t *testing.T, data []byte) *node {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	top := &node{}
	stack := []*node{top}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse as XML: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			parent := stack[len(stack)-1]
			parent.kids = append(parent.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			stack[len(stack)-1].text += string(tok)
		}
	}
	if len(top.kids) != 1 || top.kids[0].name != "svg" {
		t.Fatalf("want one <svg> root element, got %d elements", len(top.kids))
	}
	return top.kids[0]
}

// all returns n's descendants named name (any name if ""), with class
// class (any if ""), in document order.
func (n *node) all(name, class string) []*node {
	var out []*node
	for _, k := range n.kids {
		if (name == "" || k.name == name) && (class == "" || k.attr["class"] == class) {
			out = append(out, k)
		}
		out = append(out, k.all(name, class)...)
	}
	return out
}

// texts returns the text of each of nodes.
func texts(nodes []*node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.text)
	}
	return out
}

// coords parses a polyline's points attribute.
func coords(t *testing.T, points string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, p := range strings.Fields(points) {
		x, y, ok := strings.Cut(p, ",")
		fx, err1 := strconv.ParseFloat(x, 64)
		fy, err2 := strconv.ParseFloat(y, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("point %q is not x,y", p)
		}
		out = append(out, [2]float64{fx, fy})
	}
	return out
}

// attrf is a numeric attribute of n.
func attrf(t *testing.T, n *node, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr[name], 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.name, name, n.attr[name], err)
	}
	return v
}

// drawn is what a test expects of one panel.
type drawn struct {
	points []int    // the number of points of each polyline, in order
	legend []string // the legend's names, in order
	xticks []string // the x tick labels; nil: not checked
	yticks []string // the y tick labels; nil: not checked
}

func TestWriteSVG(t *testing.T) {
	for _, tc := range []struct {
		name   string
		panels []chartPanel
		want   []drawn
	}{{
		name: "lines with markers on a log x axis with explicit ticks",
		panels: []chartPanel{{
			Title: "goodput",
			X:     chartAxis{Label: "streams", Log: true, Ticks: []float64{1, 4, 16}},
			Y:     chartAxis{Label: "Mbit/s", FromZero: true},
			Series: []chartSeries{
				{Name: "netqdisc tbf", Points: []xy{{1, 90}, {4, 95}, {16, 97}}, Markers: true},
				{Name: "upstream tbf", Points: []xy{{1, 80}, {4, 85}, {16, 60}}, Colour: 1, Markers: true},
			},
		}},
		want: []drawn{{points: []int{3, 3}, legend: []string{"netqdisc tbf", "upstream tbf"}, xticks: []string{"1", "4", "16"}, yticks: []string{"0", "20", "40", "60", "80", "100"}}},
	}, {
		name: "names with markup characters are escaped",
		panels: []chartPanel{{
			Title:  `a <b> & "c"`,
			X:      chartAxis{Label: "x < 1 & y"},
			Y:      chartAxis{Label: "<y>"},
			Series: []chartSeries{{Name: `tbf <1 queue> & "fq"`, Points: []xy{{0, 1}, {1, 2}}}},
		}},
		want: []drawn{{points: []int{2}, legend: []string{`tbf <1 queue> & "fq"`}}},
	}, {
		name: "log y ticks are the powers of ten around the data",
		panels: []chartPanel{{
			Y:      chartAxis{Log: true},
			Series: []chartSeries{{Name: "rtt", Points: []xy{{0, 0.03}, {1, 450}, {2, 7}}}},
		}},
		want: []drawn{{points: []int{3}, legend: []string{"rtt"}, yticks: []string{"0.01", "0.1", "1", "10", "100", "1000"}}},
	}, {
		name: "NaN, infinities, zero and negatives are skipped on a log axis",
		panels: []chartPanel{{
			Y: chartAxis{Log: true},
			Series: []chartSeries{{Name: "rtt", Points: []xy{
				{1, math.NaN()}, {2, math.Inf(1)}, {3, 0}, {4, -5}, {5, 10}, {6, 100}, {math.NaN(), 1}, {math.Inf(-1), 1}, {7, math.Inf(-1)},
			}}},
		}},
		want: []drawn{{points: []int{2}, legend: []string{"rtt"}, yticks: []string{"10", "100"}}},
	}, {
		name: "NaN and infinities are skipped on a linear axis, zero and negatives kept",
		panels: []chartPanel{{
			Series: []chartSeries{{Name: "rate", Points: []xy{{0, -1}, {1, math.NaN()}, {2, 0}, {3, math.Inf(1)}, {4, 1}}}},
		}},
		want: []drawn{{points: []int{3}, legend: []string{"rate"}}},
	}, {
		name: "an empty series, or one with no point to place, draws nothing and is not in the legend",
		panels: []chartPanel{{
			X: chartAxis{Log: true},
			Series: []chartSeries{
				{Name: "empty"},
				{Name: "unplaceable", Points: []xy{{0, 1}, {-1, 2}}},
				{Name: "drawn", Points: []xy{{1, 1}, {10, 2}}},
			},
		}},
		want: []drawn{{points: []int{2}, legend: []string{"drawn"}}},
	}, {
		name:   "a panel with nothing in it",
		panels: []chartPanel{{Title: "nothing", X: chartAxis{Log: true}, Y: chartAxis{Log: true}}},
		want:   []drawn{{xticks: []string{"1", "10"}, yticks: []string{"1", "10"}}},
	}, {
		name:   "a single point",
		panels: []chartPanel{{Series: []chartSeries{{Name: "one", Points: []xy{{3, 5}}, Markers: true}}}},
		want:   []drawn{{points: []int{1}, legend: []string{"one"}}},
	}, {
		name: "one stream count on a log axis with explicit ticks",
		panels: []chartPanel{{
			X:      chartAxis{Log: true, Ticks: []float64{4}},
			Series: []chartSeries{{Name: "tbf", Points: []xy{{4, 5}}, Markers: true}},
		}},
		want: []drawn{{points: []int{1}, legend: []string{"tbf"}, xticks: []string{"4"}}},
	}, {
		name: "panels side by side, an unnamed dashed line out of the legend",
		panels: []chartPanel{
			{Title: "left", Series: []chartSeries{{Name: "a", Points: []xy{{0, 1}, {1, 2}}}}},
			{Title: "right", Y: chartAxis{FromZero: true}, Series: []chartSeries{
				{Name: "wire", Points: []xy{{0, 9}, {0.1, 10}, {0.2, 11}}},
				{Points: []xy{{0, 10}, {0.2, 10}}, Dashed: true},
			}},
		},
		want: []drawn{{points: []int{2}, legend: []string{"a"}}, {points: []int{3, 2}, legend: []string{"wire"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := writeSVG(&buf, tc.panels); err != nil {
				t.Fatal(err)
			}
			svg := parseSVG(t, buf.Bytes())
			if got, want := attrf(t, svg, "width"), float64(panelWidth*len(tc.panels)); got != want {
				t.Errorf("width %v, want %v", got, want)
			}
			panels := svg.all("g", "panel")
			if len(panels) != len(tc.want) {
				t.Fatalf("%d panels, want %d", len(panels), len(tc.want))
			}
			for i, p := range panels {
				checkPanel(t, p, tc.panels[i], tc.want[i], float64(i*panelWidth))
			}
		})
	}
}

// checkPanel checks a drawn panel p against want, and that its lines,
// markers and ticks lie in its plot area, which lies in the panel starting
// at x0.
func checkPanel(t *testing.T, p *node, in chartPanel, want drawn, x0 float64) {
	t.Helper()
	if got := texts(p.all("text", "title")); !slices.Equal(got, []string{in.Title}) {
		t.Errorf("title %q, want %q", got, in.Title)
	}
	if got := texts(p.all("text", "xlabel")); !slices.Equal(got, []string{in.X.Label}) {
		t.Errorf("x label %q, want %q", got, in.X.Label)
	}
	if got := texts(p.all("text", "ylabel")); !slices.Equal(got, []string{in.Y.Label}) {
		t.Errorf("y label %q, want %q", got, in.Y.Label)
	}
	areas := p.all("rect", "plot-area")
	if len(areas) != 1 {
		t.Fatalf("%d plot areas, want 1", len(areas))
	}
	a := areas[0]
	left, top := attrf(t, a, "x"), attrf(t, a, "y")
	right, bottom := left+attrf(t, a, "width"), top+attrf(t, a, "height")
	if left < x0 || right > x0+panelWidth || top < 0 || bottom > panelHeight {
		t.Errorf("plot area [%v,%v]x[%v,%v] is outside the panel at x %v", left, right, top, bottom, x0)
	}
	inside := func(what string, x, y float64) {
		if !(x >= left && x <= right && y >= top && y <= bottom) {
			t.Errorf("%s at (%v, %v) is outside the plot area [%v,%v]x[%v,%v]", what, x, y, left, right, top, bottom)
		}
	}
	var counts []int
	for _, l := range p.all("polyline", "series") {
		pts := coords(t, l.attr["points"])
		counts = append(counts, len(pts))
		for _, pt := range pts {
			inside("a point", pt[0], pt[1])
		}
	}
	if !slices.Equal(counts, want.points) {
		t.Errorf("polylines with %v points, want %v", counts, want.points)
	}
	if got := texts(p.all("text", "legend-name")); !slices.Equal(got, want.legend) {
		t.Errorf("legend %q, want %q", got, want.legend)
	}
	var legendMarkers []*node
	for _, l := range p.all("g", "legend") {
		legendMarkers = append(legendMarkers, l.all("", "marker")...)
	}
	for _, c := range p.all("circle", "marker") {
		if !slices.Contains(legendMarkers, c) {
			inside("a marker", attrf(t, c, "cx"), attrf(t, c, "cy"))
		}
	}
	xticks, yticks := p.all("text", "xtick"), p.all("text", "ytick")
	for _, tk := range xticks {
		inside("x tick "+tk.text, attrf(t, tk, "x"), top)
	}
	for _, tk := range yticks {
		inside("y tick "+tk.text, left, attrf(t, tk, "y"))
	}
	if want.xticks != nil && !slices.Equal(texts(xticks), want.xticks) {
		t.Errorf("x ticks %q, want %q", texts(xticks), want.xticks)
	}
	if want.yticks != nil && !slices.Equal(texts(yticks), want.yticks) {
		t.Errorf("y ticks %q, want %q", texts(yticks), want.yticks)
	}
}

// TestSVGEscapes checks the raw text: a name's '<' and '&' must reach the
// file escaped, or the document is not XML (the decoder above would fail
// too; this says why).
func TestSVGEscapes(t *testing.T) {
	var buf bytes.Buffer
	name := `tbf <1 queue> & "fq"`
	if err := writeSVG(&buf, []chartPanel{{Title: name, Series: []chartSeries{{Name: name, Points: []xy{{0, 1}}}}}}); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); strings.Contains(s, "<1 queue>") || !strings.Contains(s, "tbf &lt;1 queue&gt; &amp; ") {
		t.Errorf("the name is not escaped:\n%s", s)
	}
}

func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []float64
	}{
		{0.03, 450, []float64{0.01, 0.1, 1, 10, 100, 1000}},
		{1, 64, []float64{1, 10, 100}},
		{10, 10, []float64{10, 100}},
		{2, 3, []float64{1, 10}},
		{1e-12, 1e12, []float64{1e-12, 1e-9, 1e-6, 1e-3, 1, 1e3, 1e6, 1e9, 1e12}},
	} {
		lo, hi, ticks := logTicks(tc.lo, tc.hi)
		var got []float64
		for _, tk := range ticks {
			got = append(got, tk.v)
			if e := math.Log10(tk.v); math.Abs(e-math.Round(e)) > 1e-9 {
				t.Errorf("logTicks(%v, %v): tick %v is not a power of ten", tc.lo, tc.hi, tk.v)
			}
			if tk.v < lo*(1-1e-9) || tk.v > hi*(1+1e-9) {
				t.Errorf("logTicks(%v, %v): tick %v outside the range [%v, %v]", tc.lo, tc.hi, tk.v, lo, hi)
			}
		}
		if lo > tc.lo || hi < tc.hi {
			t.Errorf("logTicks(%v, %v): range [%v, %v] does not take in the data", tc.lo, tc.hi, lo, hi)
		}
		if !slices.EqualFunc(got, tc.want, func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*b }) {
			t.Errorf("logTicks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 97.3, []string{"0", "20", "40", "60", "80", "100"}},
		{0, 0.3, []string{"0.0", "0.1", "0.2", "0.3"}},
		{12, 13, []string{"12.0", "12.2", "12.4", "12.6", "12.8", "13.0"}},
		{-7, 3, []string{"-8", "-6", "-4", "-2", "0", "2", "4"}},
		{0, 9400, []string{"0", "2000", "4000", "6000", "8000", "10000"}},
	} {
		lo, hi, ticks := linearTicks(tc.lo, tc.hi)
		var got []string
		for _, tk := range ticks {
			got = append(got, tk.label)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("linearTicks(%v, %v) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
		if lo > tc.lo || hi < tc.hi || ticks[0].v != lo || ticks[len(ticks)-1].v != hi {
			t.Errorf("linearTicks(%v, %v): range [%v, %v] does not run from the first tick to the last around the data", tc.lo, tc.hi, lo, hi)
		}
	}
}

// TestChart draws the three panels from Summaries as qdiscbench has them,
// and checks Chart's refusals.
func TestChart(t *testing.T) {
	dir := t.TempDir()
	tbf := Candidate{QDisc: "tbf", Impl: "netqdisc", Rate: 100e6 / 8}
	var sums []Summary
	for _, n := range []int{1, 4, 16} {
		sums = append(sums, Summary{Suite: "throughput", Setting: strconv.Itoa(n), Candidate: tbf, Rounds: []measure.Result{{Streams: n, GoodputBps: 11e6}}})
	}
	sums = append(sums, Summary{Suite: "bufferbloat", Setting: "10 Mbit/s", Candidate: tbf, Rounds: []measure.Result{{
		ProbeRTTs: []measure.RTTPoint{{At: 0, RTT: 0}, {At: time.Second, RTT: 300 * time.Millisecond}},
	}}})
	timeline := []Summary{{Setting: "100 Mbit/s", Candidate: tbf, Rounds: []measure.Result{{
		Timeline: []measure.Point{{At: 100 * time.Millisecond, WireBps: 12e6}, {At: 200 * time.Millisecond, WireBps: 12.5e6}},
	}}}}

	path := filepath.Join(dir, "c.SVG")
	if err := Chart(path, sums, timeline); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	svg := parseSVG(t, data)
	var titles []string
	for _, p := range svg.all("g", "panel") {
		titles = append(titles, texts(p.all("text", "title"))...)
	}
	want := []string{"Goodput against streams (ceiling 100 Gbit/s)", "RTT of a sparse flow under 4 bulk streams, 10 Mbit/s", "On-wire rate over time"}
	if !slices.Equal(titles, want) {
		t.Errorf("panels %q, want %q", titles, want)
	}
	// The timeline: the wire's line and the configured rate's, dashed.
	lines := svg.all("g", "panel")[2].all("polyline", "series")
	if len(lines) != 2 || lines[1].attr["stroke-dasharray"] == "" || lines[0].attr["stroke"] != lines[1].attr["stroke"] {
		t.Errorf("the timeline wants a line and a dashed one in its colour, got %d lines", len(lines))
	}

	for _, tc := range []struct {
		name, path string
		sums       []Summary
		want       string
	}{
		{"png", filepath.Join(dir, "c.png"), sums, "give a .svg file name"},
		{"no extension", filepath.Join(dir, "c"), sums, "give a .svg file name"},
		{"nothing to draw", filepath.Join(dir, "empty.svg"), nil, "nothing to draw"},
	} {
		err := Chart(tc.path, tc.sums, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Chart(%s) = %v, want an error saying %q", tc.name, tc.path, err, tc.want)
		}
		if _, err := os.Stat(tc.path); err == nil {
			t.Errorf("%s: Chart wrote %s", tc.name, tc.path)
		}
	}
}
