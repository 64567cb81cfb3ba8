package sim

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one line of a chart.
type Series struct {
	Name string
	X, Y []float64
	Dash bool
}

var palette = []string{"#d62728", "#ff7f0e", "#9467bd", "#1f77b4", "#2ca02c", "#8c564b", "#17becf", "#e377c2"}

// Chart is a line chart drawn as SVG, with no dependency.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	YMin, YMax            float64 // both 0: from the data
	HLine                 float64 // a dashed reference line (0: none)
	HLabel                string
}

func niceStep(span float64, ticks int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(ticks)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// svg renders the chart at (ox, oy) in a w × h box.
func (c Chart) svg(b *strings.Builder, ox, oy, w, h float64) {
	const left, right, top, bottom = 60.0, 170.0, 28.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	if c.HLine != 0 {
		ymax = math.Max(ymax, c.HLine)
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if c.YMin != 0 || c.YMax != 0 {
		ymin, ymax = c.YMin, c.YMax
	} else {
		ymin = math.Min(0, ymin)
	}
	xstep, ystep := niceStep(xmax-xmin, 6), niceStep(ymax-ymin, 5)
	xmin, xmax = math.Floor(xmin/xstep)*xstep, math.Ceil(xmax/xstep)*xstep
	ymax = math.Ceil(ymax/ystep) * ystep
	if xmax == xmin {
		xmax = xmin + xstep
	}
	if ymax == ymin {
		ymax = ymin + ystep
	}
	px := func(x float64) float64 { return ox + left + (x-xmin)/(xmax-xmin)*pw }
	py := func(y float64) float64 { return oy + top + ph - (y-ymin)/(ymax-ymin)*ph }
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="14" font-weight="bold">%s</text>`+"\n", ox+left, oy+18, html.EscapeString(c.Title))
	for y := ymin; y <= ymax+ystep/1e6; y += ystep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, px(xmin), py(y), px(xmax), py(y))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">%s</text>`+"\n", px(xmin)-4, py(y)+4, fmtTick(y))
	}
	for x := xmin; x <= xmax+xstep/1e6; x += xstep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`, px(x), py(ymin), px(x), py(ymax))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`+"\n", px(x), py(ymin)+15, fmtTick(x))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", px(xmin), py(ymax), pw, ph)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">%s</text>`+"\n", ox+left+pw/2, oy+h-6, html.EscapeString(c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(%.1f,%.1f) rotate(-90)" font-size="12" text-anchor="middle">%s</text>`+"\n", ox+14, oy+top+ph/2, html.EscapeString(c.YLabel))
	if c.HLine != 0 && c.HLine >= ymin && c.HLine <= ymax {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="2,4"/>`, px(xmin), py(c.HLine), px(xmax), py(c.HLine))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11">%s</text>`+"\n", px(xmin)+4, py(c.HLine)-4, html.EscapeString(c.HLabel))
	}
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		var pts []string
		for k := range s.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[k]), py(math.Min(math.Max(s.Y[k], ymin), ymax))))
		}
		dash := ""
		if s.Dash {
			dash = ` stroke-dasharray="6,3"`
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>`+"\n", col, dash, strings.Join(pts, " "))
		if len(s.X) <= 12 {
			for k := range s.X {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, px(s.X[k]), py(math.Min(math.Max(s.Y[k], ymin), ymax)), col)
			}
		}
		ly := oy + top + 14 + float64(i)*18
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`, ox+w-right+10, ly-4, ox+w-right+30, ly-4, col, dash)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11">%s</text>`+"\n", ox+w-right+34, ly, html.EscapeString(s.Name))
	}
}

func fmtTick(v float64) string {
	if math.Abs(v-math.Round(v)) < 1e-9 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", math.Round(v*100)/100)
}

// SVG renders charts stacked vertically, each w × h.
func SVG(w, h float64, charts ...Chart) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`+"\n", w, h*float64(len(charts)), w, h*float64(len(charts)))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, c := range charts {
		c.svg(&b, 0, float64(i)*h, w, h)
	}
	b.WriteString("</svg>\n")
	return b.String()
}
