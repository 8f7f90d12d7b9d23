package tasks

import (
	"fmt"
	"strings"
)

// The page's markup, written by hand rather than by html/template: a
// template's method lookup by name at run time (reflect's MethodByName)
// stops the linker from dropping unused exported methods anywhere in the
// binary, which made bin/drums 3.4 MB larger, and parsing the template
// cost every drums process 64 KB at package init
// (bench/results/binaries.md).
//
// Each value goes through the escaper html/template applied in its
// context, so that the page stays byte for byte what the template made
// (testdata/report.html.golden, the kept reports): escText in text, in a
// quoted attribute and in <title>; escURL for a whole URL in href or src;
// escFragment after an href's "#". A new value in the page takes the
// escaper of its context; static markup is written as is.

// htmlHead is the page up to its first value.
const htmlHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>drums task-compat report</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1240px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; }
td.n, th.n { text-align: right; }
code { font-size: 92%; }
.badge { display: inline-block; padding: 0 .45em; border-radius: 3px; color: #fff; font-weight: 600; }
.s-ran { background: #2e7d32; fill: #2e7d32; }
.s-diverged { background: #ad1457; fill: #d81b60; }
.s-needs-file-cache { background: #b26a00; fill: #f9a825; }
.s-needs-live-web { background: #1565c0; fill: #1565c0; }
.s-missing-app { background: #6a1b9a; fill: #8e24aa; }
.s-unsupported { background: #616161; fill: #9e9e9e; }
.s-failed { background: #c62828; fill: #c62828; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
article { border-top: 1px solid #ddd; padding: .5em 0 .7em; }
article h4 { margin: .2em 0; font-weight: 600; }
.reason { white-space: pre-wrap; margin: .3em 0; }
.meta { color: #555; margin: .2em 0; }
figure { display: inline-block; margin: .3em .8em .3em 0; vertical-align: top; }
figure img { width: 384px; border: 1px solid #bbb; display: block; }
figcaption { color: #555; font-size: 12px; }
.missing { display: inline-block; padding: .2em .6em; border: 1px dashed #bbb; color: #777; }
details { margin: .3em 0; }
summary { cursor: pointer; color: #1a4d8f; }
pre.tree { max-height: 36em; overflow: auto; border: 1px solid #bbb; padding: .4em; font-size: 12px; }
.value { white-space: pre-wrap; font-family: monospace; font-size: 12px; }
</style>
</head>
<body>
<h1>drums task-compat report</h1>
`

// write writes the page into b.
func (p htmlPage) write(b *strings.Builder) {
	b.WriteString(htmlHead)
	if p.Command != "" {
		fmt.Fprintf(b, "<p>Command: <code>%s</code></p>\n", escText(p.Command))
	}
	if p.Started != "" {
		fmt.Fprintf(b, "<p>Started %s, took %s, mode: %s.</p>\n", escText(p.Started), escText(p.Took), escText(p.Mode))
	}
	fmt.Fprintf(b, "<p>%d tasks.</p>\n<ul>\n", p.Tasks)
	for _, s := range p.Statuses {
		fmt.Fprintf(b, "<li><span class=\"badge s-%s\">%s</span> %s</li>\n", escText(s.Name), escText(s.Name), escText(s.Meaning))
	}
	b.WriteString("</ul>\n\n<h2>Totals per domain</h2>\n")
	p.Chart.write(b)

	b.WriteString("\n<table>\n<tr><th>domain</th><th class=\"n\">tasks</th>")
	for _, s := range p.Statuses {
		fmt.Fprintf(b, "<th class=\"n\">%s</th>", escText(s.Name))
	}
	b.WriteString("<th class=\"n\">setup ok</th><th class=\"n\">score before 0</th><th class=\"n\">score before &gt;0</th><th class=\"n\">no score</th>")
	solutions := p.All.Solved+p.All.Unsolved > 0
	if solutions {
		b.WriteString("<th class=\"n\">solved by its solution</th><th class=\"n\">solution failed</th>")
	}
	b.WriteString("</tr>\n")
	for _, d := range p.Totals {
		fmt.Fprintf(b, "<tr><td><a href=\"#d-%s\">%s</a></td>", escFragment(d.Name), escText(d.Name))
		d.writeCounts(b, solutions)
		b.WriteString("</tr>\n")
	}
	b.WriteString("<tr><th>all</th>")
	p.All.writeCounts(b, solutions)
	b.WriteString("</tr>\n</table>\n\n<h2>Tasks</h2>\n")

	for _, d := range p.Domains {
		fmt.Fprintf(b, "<section id=\"d-%s\">\n<h3>%s (%d)</h3>\n", escText(d.Name), escText(d.Name), len(d.Tasks))
		for _, t := range d.Tasks {
			t.write(b)
		}
		b.WriteString("</section>\n")
	}
	b.WriteString("</body>\n</html>\n")
}

// writeCounts writes a row's cells after its name, the solutions' counts
// when the run had solutions.
func (d domainTotals) writeCounts(b *strings.Builder, solutions bool) {
	fmt.Fprintf(b, "<td class=\"n\">%d</td>", d.Tasks)
	for _, n := range d.ByStatus {
		fmt.Fprintf(b, "<td class=\"n\">%d</td>", n)
	}
	fmt.Fprintf(b, "<td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n\">%d</td>", d.SetupOK, d.ScoreZero, d.ScorePositive, d.NoScore)
	if solutions {
		fmt.Fprintf(b, "<td class=\"n\">%d</td><td class=\"n\">%d</td>", d.Solved, d.Unsolved)
	}
}

func (c htmlChart) write(b *strings.Builder) {
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"tasks per domain by status\">\n",
		c.Width, c.Height, c.Width, c.Height)
	for _, r := range c.Rows {
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", c.LabelX, r.TextY, escText(r.Label))
		for _, s := range r.Segments {
			fmt.Fprintf(b, "<rect class=\"s-%s\" x=\"%s\" y=\"%d\" width=\"%s\" height=\"16\"><title>%s</title></rect>\n",
				escText(s.Status), escText(s.X), s.Y, escText(s.W), escText(s.Tip))
		}
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%d\">%s</text>\n", escText(r.TotalX), r.TextY, escText(r.Total))
	}
	for _, l := range c.Legend {
		fmt.Fprintf(b, "<rect class=\"s-%s\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" /><text x=\"%d\" y=\"%d\">%s</text>\n",
			escText(l.Status), l.X, l.Y, l.TextX, l.TextY, escText(l.Status))
	}
	b.WriteString("</svg>\n")
}

// write writes the task's article.
func (t htmlTask) write(b *strings.Builder) {
	fmt.Fprintf(b, "<article id=\"%s\">\n<h4><a href=\"#%s\">%s/%s</a> <span class=\"badge s-%s\">%s</span> score %s",
		escText(t.Anchor), escFragment(t.Anchor), escText(t.Domain), escText(t.ID), escText(t.Status), escText(t.Status), escText(t.Scores))
	if t.Seconds != "" {
		fmt.Fprintf(b, ", %s s", escText(t.Seconds))
	}
	b.WriteString("</h4>\n")
	if t.Reason != "" {
		fmt.Fprintf(b, "<p class=\"reason\">%s</p>\n", escText(t.Reason))
	}
	if t.Solution != "" {
		fmt.Fprintf(b, "<p class=\"solution\">reference solution: %s</p>\n", escText(t.Solution))
	}
	fmt.Fprintf(b, "<p class=\"meta\">setup ok: %s, observation ok: %s, getters ok: %s", escText(t.Setup), escText(t.Observation), escText(t.Getters))
	if t.Desktop != "" {
		fmt.Fprintf(b, ", desktop <code>%s</code>", escText(t.Desktop))
	}
	b.WriteString("</p>\n")

	if len(t.Shots) > 0 {
		b.WriteString("<div>\n")
		for _, s := range t.Shots {
			b.WriteString("<figure>")
			if s.Src != "" {
				fmt.Fprintf(b, "<a href=\"%s\"><img src=\"%s\" loading=\"lazy\" alt=\"screenshot %s\" /></a>", escURL(s.Src), escURL(s.Src), escText(s.Label))
			} else {
				b.WriteString("<span class=\"missing\">screenshot not kept</span>")
			}
			fmt.Fprintf(b, "<figcaption>%s", escText(s.Label))
			if s.Bytes != "" {
				fmt.Fprintf(b, ", %s bytes", escText(s.Bytes))
			}
			b.WriteString("</figcaption></figure>\n")
		}
		b.WriteString("</div>\n")
	}

	if tr := t.Tree; tr != nil && tr.Src != "" {
		fmt.Fprintf(b, "<details><summary>%s (%s bytes, %d elements)</summary>\n", escText(tr.Label), escText(tr.Bytes), tr.Elements)
		fmt.Fprintf(b, "<p><a href=\"%s\" target=\"_blank\">the whole tree</a> (XML: a browser shows it as a tree in a tab of its own)</p>\n", escURL(tr.Src))
		fmt.Fprintf(b, "<pre class=\"tree\">%s</pre>\n", escText(tr.Outline))
		if tr.More != 0 {
			fmt.Fprintf(b, "<p class=\"meta\">and %d more elements</p>\n", tr.More)
		}
		if tr.Error != "" {
			fmt.Fprintf(b, "<p class=\"meta\">%s</p>\n", escText(tr.Error))
		}
		b.WriteString("</details>\n")
	} else if tr != nil {
		fmt.Fprintf(b, "<p class=\"meta\">%s: %s bytes, not kept</p>\n", escText(tr.Label), escText(tr.Bytes))
	}

	if len(t.Steps) > 0 {
		fmt.Fprintf(b, "<details><summary>timing: %s s</summary>\n<table>\n<tr><th>phase</th><th>step</th><th class=\"n\">s</th><th>note</th></tr>\n", escText(t.Seconds))
		for _, s := range t.Steps {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td class=\"n\">%s</td><td>%s</td></tr>\n", escText(s.Phase), escText(s.Type), escText(s.Seconds), escText(s.Note))
		}
		b.WriteString("</table>\n</details>\n")
	}

	for _, e := range t.Evals {
		e.write(b)
	}
	b.WriteString("</article>\n")
}

// write writes one evaluation's details.
func (e htmlEval) write(b *strings.Builder) {
	fmt.Fprintf(b, "<details><summary>evaluation %s: score %s</summary>\n", escText(e.Label), escText(e.Score))
	if e.Error != "" {
		fmt.Fprintf(b, "<p class=\"reason\">%s</p>\n", escText(e.Error))
	}
	if len(e.NotNative) > 0 {
		b.WriteString("<p>not native (left to OSWorld's Python): ")
		for i, n := range e.NotNative {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "<code>%s</code>", escText(n))
		}
		b.WriteString("</p>\n")
	}
	if len(e.Getters) > 0 {
		b.WriteString("<table>\n<tr><th>getter</th><th>type</th><th>ok</th><th>value or error</th></tr>\n")
		for _, g := range e.Getters {
			ok, value := "no", g.Value
			if g.OK {
				ok = "yes"
			}
			if g.Error != "" {
				value = g.Error
			}
			fmt.Fprintf(b, "<tr><td>%s %d</td><td>%s</td><td>%s</td><td class=\"value\">%s</td></tr>\n", escText(g.Role), g.Index, escText(g.Type), ok, escText(value))
		}
		b.WriteString("</table>\n")
	}
	if len(e.Metrics) > 0 {
		b.WriteString("<table>\n<tr><th>metric</th><th class=\"n\">score</th><th>note</th></tr>\n")
		for _, m := range e.Metrics {
			fmt.Fprintf(b, "<tr><td>%s</td><td class=\"n\">%s</td><td>%s</td></tr>\n", escText(m.Func), escText(m.Score), escText(m.Note))
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("</details>\n")
}

// escText is html/template's escaping of a string in text, in a quoted
// attribute and in <title> (its htmlEscaper): the five characters
// html.EscapeString escapes, the same way, and also "+" (as "&#43;") and
// NUL (as U+FFFD). All seven are ASCII, which is never part of another
// character in UTF-8, so a byte loop finds them in any string.
func escText(s string) string {
	return replaceBytes(s, func(i int) string {
		switch s[i] {
		case 0:
			return "\uFFFD"
		case '"':
			return "&#34;"
		case '&':
			return "&amp;"
		case '\'':
			return "&#39;"
		case '+':
			return "&#43;"
		case '<':
			return "&lt;"
		case '>':
			return "&gt;"
		}
		return ""
	})
}

// escURL is html/template's treatment of a whole URL in a quoted href or
// src: one with a scheme other than http, https or mailto becomes
// "#ZgotmplZ" (its urlFilter); bytes that are neither reserved nor
// unreserved in RFC 3986 are percent-encoded, valid escapes kept (its
// urlNormalizer); then escText.
func escURL(s string) string {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") &&
		!strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "mailto") {
		s = "#ZgotmplZ"
	}
	return escText(percentEncode(s, true))
}

// escFragment is html/template's escaping of a value after "#" in a
// quoted href (its urlEscaper): every byte but RFC 3986's unreserved
// ones percent-encoded, which leaves nothing for escText to do.
func escFragment(s string) string { return percentEncode(s, false) }

// percentEncode is html/template's processURLOnto: with keepReserved,
// RFC 3986's reserved characters (but "'", "(" and ")") and valid escapes
// are kept as well as the unreserved ones.
func percentEncode(s string, keepReserved bool) string {
	const hex = "0123456789abcdef"
	return replaceBytes(s, func(i int) string {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~", c) >= 0:
			return ""
		case keepReserved && strings.IndexByte("!#$&*+,/:;=?@[]", c) >= 0:
			return ""
		case keepReserved && c == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]):
			return ""
		}
		return string([]byte{'%', hex[c>>4], hex[c&0xf]})
	})
}

// replaceBytes is s with each byte s[i] replaced by repl(i) where that is
// not ""; s itself when no byte is.
func replaceBytes(s string, repl func(i int) string) string {
	var b strings.Builder
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); i++ {
		r := repl(i)
		if r == "" {
			continue
		}
		if done == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[done:i])
		b.WriteString(r)
		done = i + 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
