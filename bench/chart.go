package main

import (
	"errors"
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/batonhq/baton/internal/bench"
)

// series is one implementation on one store across contender counts.
type series struct {
	label string
	pts   map[int]bench.Result
}

// contendedSeries groups the contended results by impl and store, in the
// order they first appear.
func contendedSeries(rs []bench.Result) []series {
	var out []series
	idx := map[string]int{}
	for _, r := range rs {
		// The contended floors run at 8 contenders only: they are in the
		// tables, not the chart.
		if r.Workload != "contended" || strings.Contains(r.Impl, "floor") {
			continue
		}
		label := r.Impl + " · " + r.Store
		i, ok := idx[label]
		if !ok {
			i = len(out)
			idx[label] = i
			out = append(out, series{label: label, pts: map[int]bench.Result{}})
		}
		out[i].pts[r.Clients] = r
	}
	return out
}

// palette: baton solid, peers dashed, one colour per store.
var storeColors = map[string]color.RGBA{
	"zk":           {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"etcd":         {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"etcd34":       {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	"etcd-nofsync": {R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	"redis":        {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"redlock5":     {R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"sentinel":     {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
}

// writeChart draws wait p99 and acquisitions/s against contenders.
func writeChart(path string, rs []bench.Result) error {
	ss := contendedSeries(rs)
	if len(ss) == 0 {
		// No store ran the contended sweep (-stores redis-cluster alone):
		// no chart, rather than an empty one.
		return errors.New("no contended results to chart")
	}
	wait := plot.New()
	wait.Title.Text = "wait p99 (ms) vs contenders — lower is better"
	wait.X.Label.Text = "contenders on one lock"
	wait.Y.Label.Text = "wait p99, ms (log)"
	acq := plot.New()
	acq.Title.Text = "acquisitions/s vs contenders — higher is better"
	acq.X.Label.Text = "contenders on one lock"
	acq.Y.Label.Text = "acquisitions/s (log)"
	for _, p := range []*plot.Plot{wait, acq} {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.ConstantTicks(ticks(2, 4, 8, 16, 32, 64))
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Left = true
		p.Add(plotter.NewGrid())
	}
	// Room for the legend: above the lines for waits (which grow with
	// contenders), below them for acquisitions/s.
	wait.Legend.Top = true
	var wmin, wmax, amin, amax float64
	for _, s := range ss {
		var ns []int
		for n := range s.pts {
			ns = append(ns, n)
		}
		slices.Sort(ns)
		var wxy, axy plotter.XYs
		for _, n := range ns {
			r := s.pts[n]
			if r.WaitP99 != nil && *r.WaitP99 > 0 {
				y := *r.WaitP99 / 1000
				wxy = append(wxy, plotter.XY{X: float64(n), Y: y})
				wmin, wmax = span(wmin, wmax, y)
			}
			if r.AcqPerS > 0 {
				axy = append(axy, plotter.XY{X: float64(n), Y: r.AcqPerS})
				amin, amax = span(amin, amax, r.AcqPerS)
			}
		}
		r0 := s.pts[ns[0]]
		col, ok := storeColors[r0.Store]
		if !ok {
			col = color.RGBA{A: 0xff}
		}
		for _, pp := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{wait, wxy}, {acq, axy}} {
			if len(pp.xys) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(pp.xys)
			if err != nil {
				return err
			}
			l.Color, sc.Color = col, col
			l.Width = vg.Points(1.5)
			if r0.Impl != "baton" {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				sc.Shape = draw.BoxGlyph{}
			} else {
				sc.Shape = draw.CircleGlyph{}
			}
			pp.p.Add(l, sc)
			pp.p.Legend.Add(s.label, l, sc)
		}
	}
	if wmax > 0 {
		wait.Y.Min, wait.Y.Max = wmin/1.5, wmax*30
	}
	if amax > 0 {
		acq.Y.Min, acq.Y.Max = amin/30, amax*1.5
	}
	plots := []*plot.Plot{wait, acq}
	if m, err := manyChart(rs); err != nil {
		return err
	} else if m != nil {
		plots = append(plots, m)
	}
	img := vgimg.New(vg.Points(float64(700*len(plots))), vg.Points(560))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(30), PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	cs := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(cs[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ticks(vs ...float64) []plot.Tick {
	var ts []plot.Tick
	for _, v := range vs {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprint(v)})
	}
	return ts
}

// span widens [lo, hi] to include v (lo 0 means empty).
func span(lo, hi, v float64) (float64, float64) {
	if lo == 0 || v < lo {
		lo = v
	}
	return lo, max(hi, v)
}

// manyChart draws acquisitions/s of the "many" workload at 100 locks ×
// 4 clients, one bar per implementation and store (nil when none ran).
func manyChart(rs []bench.Result) (*plot.Plot, error) {
	var sel []bench.Result
	for _, r := range rs {
		if r.Workload == "many" && r.Locks == 100 && r.Repeat == 0 {
			sel = append(sel, r)
		}
	}
	if len(sel) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "100 independent locks × 4 clients — acquisitions/s"
	p.Y.Label.Text = "acquisitions/s"
	p.Add(plotter.NewGrid())
	w := vg.Points(28)
	for i, r := range sel {
		b, err := plotter.NewBarChart(plotter.Values{r.AcqPerS}, w)
		if err != nil {
			return nil, err
		}
		col, ok := storeColors[r.Store]
		if !ok {
			col = color.RGBA{A: 0xff}
		}
		b.Color = col
		if r.Impl != "baton" {
			b.Color = color.RGBA{R: col.R / 2, G: col.G / 2, B: col.B / 2, A: 0x90}
		}
		b.Offset = vg.Length(i)*w*1.2 - vg.Length(len(sel)-1)*w*0.6
		p.Add(b)
		p.Legend.Add(r.Impl+" · "+r.Store, b)
	}
	p.NominalX("")
	p.Legend.Top = true
	return p, nil
}
