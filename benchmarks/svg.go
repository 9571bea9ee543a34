package benchmarks

// A small SVG chart writer for --chart: panels side by side, each with a
// title, labelled axes (linear or log10), tick marks, lines with optional
// point markers or dashes, and a legend. It draws what qdiscbench's three
// charts need and nothing more; a plotting library would cost every test
// run of this module the compile time of its fonts, rasterizers and PDF
// writer.

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// A panel's size and the margins around its plot area, in SVG pixels (a
// panel is 6 by 4 inches at 96 px an inch). The margins hold the title, the
// tick labels and the axis labels.
const (
	panelWidth   = 576
	panelHeight  = 384
	marginLeft   = 72
	marginRight  = 16
	marginTop    = 36
	marginBottom = 52
	// plotInset keeps points off the plot area's edges, so that a marker
	// at the end of a range is not cut in half by the frame.
	plotInset  = 8
	tickLength = 5
)

// palette is the series colours, taken in turn by chartSeries.Colour.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// xy is one data point.
type xy struct{ X, Y float64 }

// chartAxis describes one axis of a panel.
type chartAxis struct {
	Label string
	// Log draws the axis on a log10 scale. Points whose value on it is
	// zero or negative cannot be placed and are skipped.
	Log bool
	// FromZero makes a linear axis take in 0, for quantities (rates) that
	// read wrongly against a baseline other than zero.
	FromZero bool
	// Ticks, if set, are the only ticks, labelled with their values (the
	// stream counts of a run); otherwise ticks are powers of ten on a log
	// axis and about five round values on a linear one.
	Ticks []float64
}

// chartSeries is one line of a panel.
type chartSeries struct {
	// Name is the legend's entry; a series without one is not in it.
	Name string
	// Points are drawn in order. A point with a NaN or infinite
	// coordinate, or one a log axis cannot place, is skipped.
	Points []xy
	// Colour indexes palette (modulo its length), and also picks the
	// marker's shape, so that series stay apart in black and white too.
	Colour  int
	Markers bool
	Dashed  bool
}

// chartPanel is one chart: a title, two axes and its series.
type chartPanel struct {
	Title  string
	X, Y   chartAxis
	Series []chartSeries
	// LegendTop puts the legend in the plot area's top right corner
	// instead of its bottom right one, whichever the lines leave free.
	LegendTop bool
}

// writeSVG writes panels side by side as one SVG document to w.
func writeSVG(w io.Writer, panels []chartPanel) error {
	var b strings.Builder
	width := panelWidth * len(panels)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, panelHeight, width, panelHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, panelHeight)
	for i, p := range panels {
		drawPanel(&b, p, float64(i*panelWidth))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// scale maps an axis's data values onto a pixel range.
type scale struct {
	log      bool
	lo, hi   float64 // the data range shown (positive when log)
	from, to float64 // the pixels lo and hi map to
}

// pos returns the pixel v maps to.
func (s scale) pos(v float64) float64 {
	lo, hi := s.lo, s.hi
	if s.log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	return s.from + (v-lo)/(hi-lo)*(s.to-s.from)
}

// maxMagnitude bounds the values an axis places: beyond it a range's span
// or its powers of ten would overflow (or, on a log axis, underflow to 0).
const maxMagnitude = 1e300

// placeable reports whether the axis can place v: a finite value, and a
// positive one on a log axis, within maxMagnitude (and 1/maxMagnitude).
func (a chartAxis) placeable(v float64) bool {
	if a.Log {
		return v >= 1/maxMagnitude && v <= maxMagnitude // false for NaN
	}
	return math.Abs(v) <= maxMagnitude // false for NaN and the infinities
}

// points returns the points of s both axes of p can place.
func (p chartPanel) points(s chartSeries) []xy {
	var pts []xy
	for _, pt := range s.Points {
		if p.X.placeable(pt.X) && p.Y.placeable(pt.Y) {
			pts = append(pts, pt)
		}
	}
	return pts
}

// values returns the placeable values of every series on one axis (x when
// isX), the explicit ticks of the axis included, for its range.
func (p chartPanel) values(isX bool) []float64 {
	a := p.Y
	if isX {
		a = p.X
	}
	var vs []float64
	for _, s := range p.Series {
		for _, pt := range p.points(s) {
			if isX {
				vs = append(vs, pt.X)
			} else {
				vs = append(vs, pt.Y)
			}
		}
	}
	for _, t := range a.Ticks {
		if a.placeable(t) {
			vs = append(vs, t)
		}
	}
	return vs
}

// tick is one labelled mark on an axis.
type tick struct {
	v     float64
	label string
}

// layout returns the range a shows for the values vs and its ticks.
func (a chartAxis) layout(vs []float64) (lo, hi float64, ticks []tick) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	switch {
	case a.Log && len(vs) == 0:
		lo, hi = 1, 10
	case len(vs) == 0:
		lo, hi = 0, 1
	}
	if a.FromZero && !a.Log {
		lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	}
	if len(a.Ticks) > 0 {
		lo, hi = widen(lo, hi, a.Log)
		for _, t := range a.Ticks {
			if a.placeable(t) {
				ticks = append(ticks, tick{t, strconv.FormatFloat(t, 'g', -1, 64)})
			}
		}
		return lo, hi, ticks
	}
	if a.Log {
		return logTicks(lo, hi)
	}
	lo, hi = widen(lo, hi, false)
	return linearTicks(lo, hi)
}

// widen returns a range around a single value (lo == hi), which would
// otherwise map every point to a division by zero; other ranges it
// returns as they are.
func widen(lo, hi float64, log bool) (float64, float64) {
	switch {
	case lo < hi:
		return lo, hi
	case log:
		return lo / 2, hi * 2
	case lo == 0:
		return 0, 1
	default:
		d := math.Abs(lo) / 2
		return lo - d, hi + d
	}
}

// logTicks returns the whole decades around [lo, hi] (lo > 0) and a tick
// at each power of ten in them, or at every second, third, ... one when
// they span more than ten decades.
func logTicks(lo, hi float64) (float64, float64, []tick) {
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if a == b {
		b++
	}
	step := math.Max(1, math.Ceil((b-a)/10))
	var ticks []tick
	for k := a; k <= b; k += step {
		v := math.Pow(10, k)
		ticks = append(ticks, tick{v, strconv.FormatFloat(v, 'g', -1, 64)})
	}
	return math.Pow(10, a), math.Pow(10, b), ticks
}

// linearTicks returns [lo, hi] (lo < hi) widened to multiples of a round
// step (1, 2 or 5 times a power of ten) giving about five intervals, and a
// tick at each multiple, labelled with as many decimals as the step has.
func linearTicks(lo, hi float64) (float64, float64, []tick) {
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	first, last := math.Floor(lo/step), math.Ceil(hi/step)
	var ticks []tick
	// Counting in ints: far from zero, first+1 can round back to first.
	for i := 0; i <= int(last-first); i++ {
		v := (first + float64(i)) * step
		ticks = append(ticks, tick{v, strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return first * step, last * step, ticks
}

// drawPanel draws p with its left edge at x0.
func drawPanel(b *strings.Builder, p chartPanel, x0 float64) {
	left, right := x0+marginLeft, x0+panelWidth-marginRight
	top, bottom := float64(marginTop), float64(panelHeight-marginBottom)
	xlo, xhi, xticks := p.X.layout(p.values(true))
	ylo, yhi, yticks := p.Y.layout(p.values(false))
	xs := scale{log: p.X.Log, lo: xlo, hi: xhi, from: left + plotInset, to: right - plotInset}
	ys := scale{log: p.Y.Log, lo: ylo, hi: yhi, from: bottom - plotInset, to: top + plotInset}

	b.WriteString(`<g class="panel">` + "\n")
	fmt.Fprintf(b, `<text class="title" x="%s" y="%d" text-anchor="middle" font-size="14">%s</text>`+"\n", num((left+right)/2), marginTop-14, esc(p.Title))
	fmt.Fprintf(b, `<rect class="plot-area" x="%s" y="%s" width="%s" height="%s" fill="none" stroke="black"/>`+"\n", num(left), num(top), num(right-left), num(bottom-top))
	for _, t := range xticks {
		x := num(xs.pos(t.v))
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", x, num(top), x, num(bottom))
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="black"/>`+"\n", x, num(bottom), x, num(bottom+tickLength))
		fmt.Fprintf(b, `<text class="xtick" x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", x, num(bottom+tickLength+13), esc(t.label))
	}
	for _, t := range yticks {
		y := num(ys.pos(t.v))
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", num(left), y, num(right), y)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="black"/>`+"\n", num(left-tickLength), y, num(left), y)
		fmt.Fprintf(b, `<text class="ytick" x="%s" y="%s" text-anchor="end" dy="0.35em">%s</text>`+"\n", num(left-tickLength-3), y, esc(t.label))
	}
	fmt.Fprintf(b, `<text class="xlabel" x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num((left+right)/2), panelHeight-10, esc(p.X.Label))
	ly := (top + bottom) / 2
	fmt.Fprintf(b, `<text class="ylabel" x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s</text>`+"\n", num(x0+16), num(ly), num(x0+16), num(ly), esc(p.Y.Label))
	for _, s := range p.Series {
		drawSeries(b, s, p.points(s), xs, ys)
	}
	drawLegend(b, p, right, top, bottom)
	b.WriteString("</g>\n")
}

// drawSeries draws the points pts of s as one polyline, with a marker on
// each point if s has markers. A series without points draws nothing.
func drawSeries(b *strings.Builder, s chartSeries, pts []xy, xs, ys scale) {
	if len(pts) == 0 {
		return
	}
	coords := make([]string, len(pts))
	for i, pt := range pts {
		coords[i] = num(xs.pos(pt.X)) + "," + num(ys.pos(pt.Y))
	}
	colour := palette[s.Colour%len(palette)]
	fmt.Fprintf(b, `<polyline class="series" points="%s" fill="none" stroke="%s" stroke-width="1.5"%s>`, strings.Join(coords, " "), colour, dashes(s.Dashed))
	if s.Name != "" {
		fmt.Fprintf(b, "<title>%s</title>", esc(s.Name))
	}
	b.WriteString("</polyline>\n")
	if s.Markers {
		for _, pt := range pts {
			drawMarker(b, s.Colour, xs.pos(pt.X), ys.pos(pt.Y))
		}
	}
}

// dashes returns the stroke-dasharray attribute of a dashed line.
func dashes(dashed bool) string {
	if dashed {
		return ` stroke-dasharray="6 4"`
	}
	return ""
}

// drawMarker draws series i's marker centred on (x, y): a circle, square,
// triangle or diamond, by i.
func drawMarker(b *strings.Builder, i int, x, y float64) {
	const r = 3.5
	colour := palette[i%len(palette)]
	switch i % 4 {
	case 0:
		fmt.Fprintf(b, `<circle class="marker" cx="%s" cy="%s" r="%s" fill="none" stroke="%s"/>`+"\n", num(x), num(y), num(r), colour)
	case 1:
		fmt.Fprintf(b, `<rect class="marker" x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s"/>`+"\n", num(x-r), num(y-r), num(2*r), num(2*r), colour)
	case 2:
		fmt.Fprintf(b, `<polygon class="marker" points="%s,%s %s,%s %s,%s" fill="none" stroke="%s"/>`+"\n", num(x), num(y-r), num(x+r), num(y+r), num(x-r), num(y+r), colour)
	default:
		fmt.Fprintf(b, `<polygon class="marker" points="%s,%s %s,%s %s,%s %s,%s" fill="none" stroke="%s"/>`+"\n", num(x), num(y-r), num(x+r), num(y), num(x), num(y+r), num(x-r), num(y), colour)
	}
}

// drawLegend draws a box of the named series that have points, each with a
// sample of its line, in the plot area's right corner (top or bottom, as
// p says). The width is estimated from the names' lengths: an SVG writer
// cannot measure text.
func drawLegend(b *strings.Builder, p chartPanel, right, top, bottom float64) {
	var entries []chartSeries
	longest := 0
	for _, s := range p.Series {
		if s.Name != "" && len(p.points(s)) > 0 {
			entries = append(entries, s)
			longest = max(longest, len([]rune(s.Name)))
		}
	}
	if len(entries) == 0 {
		return
	}
	const row, pad, sample = 16.0, 6.0, 24.0
	w := pad*3 + sample + float64(longest)*6.5
	h := pad*2 + row*float64(len(entries))
	x, y := right-plotInset-w, top+plotInset
	if !p.LegendTop {
		y = bottom - plotInset - h
	}
	b.WriteString(`<g class="legend">` + "\n")
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="white" fill-opacity="0.85" stroke="#999"/>`+"\n", num(x), num(y), num(w), num(h))
	for i, s := range entries {
		cy := y + pad + row*(float64(i)+0.5)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"%s/>`+"\n", num(x+pad), num(cy), num(x+pad+sample), num(cy), palette[s.Colour%len(palette)], dashes(s.Dashed))
		if s.Markers {
			drawMarker(b, s.Colour, x+pad+sample/2, cy)
		}
		fmt.Fprintf(b, `<text class="legend-name" x="%s" y="%s" dy="0.35em">%s</text>`+"\n", num(x+2*pad+sample), num(cy), esc(s.Name))
	}
	b.WriteString("</g>\n")
}

// num formats a pixel coordinate: a tenth of a pixel is finer than any
// screen shows, and keeps the file small.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// esc escapes s for SVG text and attribute values: a candidate's or
// setting's name is not ours to trust to be free of '<' or '&'.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
