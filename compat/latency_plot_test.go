package compat

// writeLatencyPlot draws BenchmarkFixedRate's latency over time as an SVG
// written by hand (no plotting library): one panel per rate, seconds of the
// measured window on x, milliseconds on a logarithmic y axis, and per
// target two lines, the p99 (solid) and the maximum (dashed) of the
// end-to-end latency of the records intended in each second.

import (
	"fmt"
	"html"
	"math"
	"os"
	"strings"
)

// plotColors are the targets' line colours, in target order.
var plotColors = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"}

// plotSeries is one line: y values (ms) per second, ≤ 0 for no data.
type plotSeries struct {
	label, color string
	dashed       bool
	ys           []float64
}

// writeLatencyPlot writes the plot of runs (one rate) to path.
func writeLatencyPlot(path string, rate fixedRate, runs []latRun) error {
	var series []plotSeries
	for i, r := range runs {
		p99 := make([]float64, len(r.perSec))
		mx := make([]float64, len(r.perSec))
		for s, h := range r.perSec {
			if h.TotalCount() > 0 {
				p99[s] = latMs(h, 99)
				mx[s] = latMs(h, 100)
			}
		}
		c := plotColors[i%len(plotColors)]
		series = append(series,
			plotSeries{label: r.target + " p99", color: c, ys: p99},
			plotSeries{label: r.target + " max", color: c, dashed: true, ys: mx})
	}
	title := fmt.Sprintf("end-to-end latency per second at %s (intended send → consumer poll)", rate)
	return os.WriteFile(path, []byte(latencySVG(title, series)), 0o644)
}

// latencySVG renders series on a log-scale y axis spanning the decades
// their positive values reach.
func latencySVG(title string, series []plotSeries) string {
	const w, h, left, right, top, bottom = 960.0, 420.0, 70.0, 190.0, 40.0, 50.0
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for _, s := range series {
		n = max(n, len(s.ys))
		for _, y := range s.ys {
			if y > 0 {
				lo, hi = min(lo, y), max(hi, y)
			}
		}
	}
	if n == 0 || math.IsInf(lo, 1) {
		lo, hi, n = 1, 10, max(n, 1)
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	pw, ph := w-left-right, h-top-bottom
	x := func(i int) float64 { return left + pw*float64(i)/float64(max(n-1, 1)) }
	y := func(v float64) float64 { return top + ph*(1-(math.Log10(v)-dlo)/(dhi-dlo)) }

	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&sb, `<rect width="%g" height="%g" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&sb, `<text x="%g" y="20" font-size="14">%s</text>`+"\n", left, html.EscapeString(title))
	for d := dlo; d <= dhi; d++ {
		v := math.Pow(10, d)
		fmt.Fprintf(&sb, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ccc"/>`+"\n", left, y(v), left+pw, y(v))
		fmt.Fprintf(&sb, `<text x="%g" y="%.1f" text-anchor="end">%s ms</text>`+"\n", left-6, y(v)+4, strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), "."))
	}
	step := max(1, n/12)
	for i := 0; i < n; i += step {
		fmt.Fprintf(&sb, `<text x="%.1f" y="%g" text-anchor="middle">%d</text>`+"\n", x(i), top+ph+18, i)
	}
	fmt.Fprintf(&sb, `<text x="%g" y="%g" text-anchor="middle">seconds into the measured window</text>`+"\n", left+pw/2, h-10)
	fmt.Fprintf(&sb, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="black"/>`+"\n", left, top, pw, ph)
	for i, s := range series {
		var pts []string
		for j, v := range s.ys {
			if v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(j), y(v)))
			}
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="5,3"`
		}
		if len(pts) > 0 {
			fmt.Fprintf(&sb, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`+"\n", s.color, dash, strings.Join(pts, " "))
		}
		ly := top + 14 + 18*float64(i)
		fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"%s/>`+"\n", left+pw+12, ly-4, left+pw+40, ly-4, s.color, dash)
		fmt.Fprintf(&sb, `<text x="%g" y="%g">%s</text>`+"\n", left+pw+46, ly, html.EscapeString(s.label))
	}
	sb.WriteString("</svg>\n")
	return sb.String()
}
