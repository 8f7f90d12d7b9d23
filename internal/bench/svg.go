package bench

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drums-dev/drums/compat"
)

// The chart is written by hand, with the standard library: one SVG of
// horizontal bar panels, one per figure, each captioned with the machine,
// its part's date and load, and the command.

// panel is one figure: bars on a linear scale from zero.
type panel struct {
	title   string
	unit    string
	caption []string
	bars    []bar
}

// bar is one bar, under a group heading when group differs from the bar
// before; several segments stack. text replaces the value printed after
// it (default: the total and the unit).
type bar struct {
	group, label string
	segs         []seg
	text         string
}

type seg struct {
	name string
	v    float64
}

// folded is the first n segments, and the rest summed as "other".
func folded(segs []seg, n int) []seg {
	if len(segs) <= n {
		return segs
	}
	other := seg{name: "other"}
	for _, s := range segs[n:] {
		other.v += s.v
	}
	return append(segs[:n:n], other)
}

func (b bar) total() float64 {
	var t float64
	for _, s := range b.segs {
		t += s.v
	}
	return t
}

// Layout, in pixels.
const (
	svgWidth    = 980
	svgMargin   = 20
	labelWidth  = 250
	valueWidth  = 170
	rowHeight   = 20
	barHeight   = 14
	captionLine = 14
	captionWrap = 150 // characters of an 11 px caption line in the width
)

// palette colours series in order of first appearance; the two servers
// keep theirs in every panel.
var palette = []string{"#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#718096", "#d69e2e", "#319795", "#e53e3e", "#4a5568"}

var fixedColours = map[string]string{serverName(string(compat.Guestd)): palette[0], serverName(string(compat.Upstream)): palette[1]}

// num prints a value with a precision that suits its size.
func num(v float64) string {
	dec := 0
	if v < 1 {
		dec = 2
	} else if v < 100 {
		dec = 1
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// wrap splits s into lines of at most n characters at spaces.
func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > n {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// pickColour keeps a series' colour from an earlier panel unless another
// series of this panel has it, else takes the first free one of the
// palette that is not a server's.
func pickColour(had string, used map[string]bool) string {
	if had != "" && !used[had] {
		return had
	}
	for _, c := range palette[2:] {
		if !used[c] {
			return c
		}
	}
	return palette[len(palette)-1]
}

// renderSVG draws the panels one under the other; a series keeps its
// colour in every panel.
func renderSVG(panels []panel) string {
	var body strings.Builder
	y := svgMargin
	colours := map[string]string{}
	for k, v := range fixedColours {
		colours[k] = v
	}
	for _, p := range panels {
		y = p.render(&body, y, colours) + 24
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, y, svgWidth, y)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, y)
	b.WriteString(body.String())
	b.WriteString("</svg>\n")
	return b.String()
}

// render draws p from y down and returns where it ends; colours maps
// series to colours, and gets the new ones of p.
func (p panel) render(b *strings.Builder, y int, colours map[string]string) int {
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", svgMargin, y+14, esc(p.title))
	y += 22
	for _, c := range p.caption {
		for _, line := range wrap(c, captionWrap) {
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" fill="#4a5568">%s</text>`+"\n", svgMargin, y+10, esc(line))
			y += captionLine
		}
	}
	var series []string
	used := map[string]bool{}
	for _, br := range p.bars {
		for _, s := range br.segs {
			if !slices.Contains(series, s.name) {
				series = append(series, s.name)
				colours[s.name] = pickColour(colours[s.name], used)
				used[colours[s.name]] = true
			}
		}
	}
	if len(series) > 1 {
		x := svgMargin
		y += 4
		for _, s := range series {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, y, colours[s], x+14, y+9, esc(s))
			x += 14 + 7*len([]rune(s)) + 16
			if x > svgWidth-200 {
				x = svgMargin
				y += 16
			}
		}
		y += 18
	}
	scale := 0.0
	for _, br := range p.bars {
		scale = max(scale, br.total())
	}
	if scale <= 0 {
		scale = 1
	}
	x0, width := svgMargin+labelWidth, svgWidth-2*svgMargin-labelWidth-valueWidth
	group := ""
	for _, br := range p.bars {
		if br.group != "" && br.group != group {
			fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", svgMargin, y+barHeight-2, esc(br.group))
			y += rowHeight
		}
		group = br.group
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", x0-8, y+barHeight-2, esc(br.label))
		x := float64(x0)
		for _, s := range br.segs {
			w := s.v / scale * float64(width)
			fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s %s</title></rect>`+"\n",
				x, y, w, barHeight, colours[s.name], esc(s.name), num(s.v), esc(p.unit))
			x += w
		}
		text := br.text
		if text == "" {
			text = num(br.total()) + " " + p.unit
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d">%s</text>`+"\n", x+6, y+barHeight-2, esc(text))
		y += rowHeight
	}
	return y
}

// SVG is the report's chart: a panel per figure.
func (r *Report) SVG() string {
	return renderSVG(r.panels())
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// caption is a figure's provenance: the machine, when its part ran under
// what load, and the command.
func (r *Report) caption(s Stamp, what string) []string {
	return []string{
		fmt.Sprintf("%s. Machine: %s.", what, r.Machine),
		fmt.Sprintf("Date: %s; load average (1 min) %s → %s. Command: %s", s.Date.Format(time.RFC3339), s.LoadBefore, s.LoadAfter, r.Command),
	}
}

func (r *Report) panels() []panel {
	var ps []panel
	if s := r.Sessions; s != nil {
		p := panel{title: "Sessions: create, reset and remove (median)", unit: "ms",
			caption: r.caption(s.Stamp, fmt.Sprintf("%s (%s image), one after the other", plural(s.Desktops, "desktop"), s.Image))}
		type row struct {
			name string
			st   compat.Stats
		}
		rows := []row{{"create-to-ready", s.Create}}
		if s.SpacedCreate != nil {
			rows = append(rows, row{"create, a spare up", *s.SpacedCreate})
		}
		for _, row := range append(rows, row{"reset-to-ready", s.Reset}, row{"remove", s.Remove}) {
			p.bars = append(p.bars, bar{label: row.name, segs: []seg{{serverName(string(compat.Guestd)), msOf(row.st.Median)}},
				text: fmt.Sprintf("%s ms (p95 %s)", num(msOf(row.st.Median)), num(msOf(row.st.P95)))})
		}
		ps = append(ps, p)
		if len(s.ByProcess) > 0 {
			m := panel{title: "Idle memory per desktop (PSS, by process)", unit: "MiB",
				caption: r.caption(s.Stamp, fmt.Sprintf("%s up, %s idle; the host's MemAvailable fell by %s MiB per desktop", plural(s.Desktops, "desktop"), s.Idle, num(mib(s.HostPerDesktop))))}
			var segs []seg
			for _, p := range s.ByProcess {
				segs = append(segs, seg{p.Name, mib(p.KiB)})
			}
			m.bars = []bar{{label: plural(s.Desktops, "desktop"), segs: folded(segs, 7)}}
			ps = append(ps, m)
		}
	}
	ps = append(ps, r.densityPanels()...)
	if l := r.Latency; l != nil && len(l.Results) > 0 {
		p := panel{title: "Request latency, one desktop (median)", unit: "ms",
			caption: r.caption(Stamp{Date: l.Started, LoadBefore: l.Results[0].LoadBefore, LoadAfter: l.Results[len(l.Results)-1].LoadAfter},
				fmt.Sprintf("%d timed requests per server and row, a new connection each", l.N))}
		for _, res := range l.Results {
			p.bars = append(p.bars, bar{group: res.Name, label: serverName(string(compat.Guestd)), segs: []seg{{serverName(string(compat.Guestd)), msOf(res.Guestd.Median)}}})
			if res.Upstream.N > 0 {
				p.bars = append(p.bars, bar{group: res.Name, label: serverName(string(compat.Upstream)), segs: []seg{{serverName(string(compat.Upstream)), msOf(res.Upstream.Median)}},
					text: fmt.Sprintf("%s ms (%.1fx)", num(msOf(res.Upstream.Median)), res.MedianRatio())})
			}
		}
		ps = append(ps, p)
	}
	if len(r.Steps) > 0 {
		ps = append(ps, r.stepPanels()...)
	}
	return ps
}

func (r *Report) stepPanels() []panel {
	st := Stamp{Date: r.Started, LoadBefore: r.Steps[0].LoadBefore, LoadAfter: r.Steps[len(r.Steps)-1].LoadAfter}
	what := "POST /execute (a pyautogui click, PAUSE = 0), GET /screenshot, GET /accessibility in a loop on every desktop at once"
	if d := r.StepLoop; d != nil {
		st = d.Stamp
		what += fmt.Sprintf(", %.0f s per loop, %d rounds, desktops with %s", d.Loop, d.Rounds, d.Setup)
	}
	rate := panel{title: "RL step loop: steps per second per desktop", unit: "steps/s", caption: r.caption(st, what)}
	split := panel{title: "Where a step's time goes (median of each request)", unit: "ms", caption: r.caption(st, what)}
	cpu := panel{title: "CPU per step, by process of the desktops", unit: "ms", caption: r.caption(st, what+"; the desktops' cgroups")}
	names := procNames(r.Steps)
	for _, s := range r.Steps {
		group, label := plural(s.Desktops, "desktop"), serverName(s.Server)
		text := fmt.Sprintf("%s (%s in all)", num(s.PerDesktop), num(s.StepsPerSecond))
		if g := r.stepRow(string(compat.Guestd), s.Desktops); s.Server == string(compat.Upstream) && g != nil && s.StepsPerSecond > 0 {
			text += fmt.Sprintf(", drums %.1fx", g.StepsPerSecond/s.StepsPerSecond)
		}
		rate.bars = append(rate.bars, bar{group: group, label: label, segs: []seg{{label, s.PerDesktop}}, text: text})
		b := bar{group: group, label: label}
		for _, q := range s.Requests {
			b.segs = append(b.segs, seg{q.Name, msOf(q.Stats.Median)})
		}
		split.bars = append(split.bars, b)
		if s.CPUMeasured {
			// The same processes in the same order in every bar: the
			// largest six of any row, then the rest as "other".
			var segs []seg
			for _, name := range names {
				v := 0.0
				if i := slices.IndexFunc(s.Procs, func(p ProcRow) bool { return p.Name == name }); i >= 0 {
					v = msOf(s.Procs[i].PerStep)
				}
				segs = append(segs, seg{name, v})
			}
			cpu.bars = append(cpu.bars, bar{group: group, label: label, segs: folded(segs, 6)})
		}
	}
	ps := []panel{rate, split}
	if len(cpu.bars) > 0 {
		ps = append(ps, cpu)
	}
	host := panel{title: "The host's CPU over the loops", unit: "%", caption: r.caption(st, what+"; all CPUs, from /proc/stat")}
	for _, s := range r.Steps {
		if h := s.Host; h != nil {
			host.bars = append(host.bars, bar{group: plural(s.Desktops, "desktop"), label: serverName(s.Server), segs: []seg{
				{"desktops' processes", 100 * h.Desktops}, {"client", 100 * h.Client}, {"others", 100 * h.Others},
				{"I/O wait", 100 * h.IOWait}, {"steal", 100 * h.Steal}, {"idle", 100 * h.Idle}},
				text: fmt.Sprintf("%.0f%% busy in the desktops", 100*h.Desktops)})
		}
	}
	if len(host.bars) > 0 {
		ps = append(ps, host)
	}
	return ps
}
