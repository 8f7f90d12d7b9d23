package tasks

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/drums-dev/drums/internal/pyvalue"
	"github.com/drums-dev/drums/internal/term"
)

// TextProgress reports a run on w: a redrawn bar on a terminal, one line per
// task otherwise (logs, CI).
type TextProgress struct {
	w      io.Writer
	bar    bool
	mu     sync.Mutex
	total  int
	done   int
	counts map[string]int
	start  time.Time
}

var _ Progress = (*TextProgress)(nil)

// NewTextProgress writes to f, as a bar when f is a terminal.
func NewTextProgress(f *os.File) *TextProgress {
	return &TextProgress{w: f, bar: term.IsTerminal(f), counts: map[string]int{}}
}

// Start begins the run.
func (p *TextProgress) Start(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.start = total, time.Now()
	if !p.bar {
		fmt.Fprintf(p.w, "tasks: %d to go\n", total)
	}
}

// Done records one finished task.
func (p *TextProgress) Done(r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.counts[r.Status]++
	if p.bar {
		p.draw()
		return
	}
	score := ""
	if r.ScoreBefore != nil {
		score = " score_before=" + pyvalue.Repr(*r.ScoreBefore)
	}
	if r.Solution != nil {
		score += " solution " + r.Solution.Outcome
		if r.ScoreAfter != nil {
			score += " score_after=" + pyvalue.Repr(*r.ScoreAfter)
		}
	}
	fmt.Fprintf(p.w, "[%d/%d] %s/%s %s%s %.1fs\n", p.done, p.total, r.Domain, r.ID, r.Status, score, r.Seconds)
}

func (p *TextProgress) draw() {
	const width = 30
	filled := 0
	if p.total > 0 {
		filled = p.done * width / p.total
	}
	var parts []string
	for _, s := range Statuses {
		if n := p.counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s  %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		p.done, p.total, time.Since(p.start).Round(time.Second), strings.Join(parts, ", "))
}

// Finish ends the bar's line.
func (p *TextProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar {
		fmt.Fprintln(p.w)
	}
}
