package atspi

import (
	"context"
	"fmt"
	"sync"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// OSWorld's /terminal builds the whole desktop's tree and evaluates
//
//	//application[@name="gnome-terminal-server"]/frame[@st:active="true"]//terminal[@st:focused="true"]
//
// answering the text of the match when there is exactly one (guest-api.md
// §5). Terminal walks only what that expression can reach: every
// application's own node (is it gnome-terminal-server?), and the subtrees
// of gnome-terminal-server applications, built with the same per-node rules
// and limits as Tree, so that the set of matches is the same.

const terminalApp = "gnome-terminal-server"

// Terminal is the text of the focused terminal in the active
// gnome-terminal window with trailing whitespace removed, or nil when there
// is not exactly one such terminal (no terminal at all included). A match
// without text gives "" (upstream fails on it).
func (s *Source) Terminal(ctx context.Context) (*string, error) {
	t, apps, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	text := s.walker(t).terminal(ctx, apps)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("look for the terminal: %w", err)
	}
	return text, nil
}

// terminal looks below every application concurrently and answers the
// match's text when there is exactly one.
func (w *walker) terminal(ctx context.Context, apps []objRef) *string {
	found := make([][]*element, len(apps))
	var wg sync.WaitGroup
	for i, ref := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i] = w.terminals(ctx, ref)
		}()
	}
	wg.Wait()
	var all []*element
	for _, f := range found {
		all = append(all, f...)
	}
	if len(all) != 1 {
		return nil
	}
	text := pyvalue.Rstrip(all[0].text)
	return &text
}

// terminals returns the matches below application ref. Only a
// gnome-terminal-server application's children are read; an application
// whose own node fails is skipped, as in Tree.
func (w *walker) terminals(ctx context.Context, ref objRef) []*element {
	isTerminalApp := func(info *nodeInfo) bool {
		if info.nameErr != nil || info.name != terminalApp {
			return false
		}
		rn, err := roleNameOf(info)
		if err != nil {
			return false
		}
		tag, _ := tagFor(rn)
		return tag == "application"
	}
	info := w.t.node(ctx, ref, func(info *nodeInfo) int {
		if !isTerminalApp(info) {
			return 0
		}
		return childPlan(info, 1, flagNone)
	})
	_, f, err := makeElement(info, flagNone)
	if err != nil || !isTerminalApp(info) {
		return nil
	}
	var out []*element
	for _, frame := range w.children(ctx, info.children, 2, f) {
		if v, _ := frame.attr("st", "active"); frame.tag == "frame" && v == "true" {
			out = appendFocusedTerminals(out, frame)
		}
	}
	return out
}

// appendFocusedTerminals appends the descendants of e (not e itself) that
// are focused terminals, in document order.
func appendFocusedTerminals(out []*element, e *element) []*element {
	for _, c := range e.children {
		if v, _ := c.attr("st", "focused"); c.tag == "terminal" && v == "true" {
			out = append(out, c)
		}
		out = appendFocusedTerminals(out, c)
	}
	return out
}
