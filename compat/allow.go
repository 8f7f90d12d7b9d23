package compat

import (
	_ "embed"
	"fmt"
	"os"
	"regexp"
	"slices"
)

// Allowlist is the reviewed list of known, intended differences. A
// difference that no entry covers fails the run.
type Allowlist struct {
	Entries []Allowed `json:"entries"`
}

// Allowed is one entry: the cases it applies to (names, or globs such as
// "execute/bad-*"), the fields (globs), optionally the two values (regular
// expressions that must match the whole value), the kind and the reason.
type Allowed struct {
	ID       string   `json:"id"`
	Cases    []string `json:"cases"`
	Fields   []string `json:"fields"`
	Upstream string   `json:"upstream,omitempty"`
	Guestd   string   `json:"guestd,omitempty"`
	// Kind is "upstream-bug" (guestd fixes it on purpose, guest-api §8.2),
	// "deliberate" (a documented deviation, §8.3), "environment" (the two
	// servers' libraries, not guestd, decide it) or "nondeterminism".
	Kind   string `json:"kind"`
	Reason string `json:"reason"`

	upRe, gdRe *regexp.Regexp
}

var allowKinds = []string{"upstream-bug", "deliberate", "environment", "nondeterminism"}

//go:embed known-differences.json
var builtinAllowlist []byte

// BuiltinAllowlist is the reviewed list kept beside the built-in cases.
func BuiltinAllowlist() (*Allowlist, error) {
	return ParseAllowlist(builtinAllowlist, "known-differences.json")
}

// LoadAllowlist reads a user's list.
func LoadAllowlist(file string) (*Allowlist, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read allowlist: %w", err)
	}
	return ParseAllowlist(data, file)
}

// ParseAllowlist decodes and validates a list; every entry needs an id, at
// least one case and field, a known kind and a reason.
func ParseAllowlist(data []byte, source string) (*Allowlist, error) {
	var a Allowlist
	if err := decodeStrict(data, &a); err != nil {
		return nil, fmt.Errorf("parse %s: %w: %w", source, ErrBadAllowlist, err)
	}
	ids := map[string]bool{}
	for i := range a.Entries {
		e := &a.Entries[i]
		bad := func(msg string) error {
			return fmt.Errorf("parse %s: entry %d (%s): %w: %s", source, i, e.ID, ErrBadAllowlist, msg)
		}
		switch {
		case e.ID == "" || ids[e.ID]:
			return nil, bad("missing or repeated id")
		case len(e.Cases) == 0 || len(e.Fields) == 0:
			return nil, bad("needs cases and fields")
		case !slices.Contains(allowKinds, e.Kind):
			return nil, bad(fmt.Sprintf("kind %q is not one of %v", e.Kind, allowKinds))
		case e.Reason == "":
			return nil, bad("needs a reason")
		}
		ids[e.ID] = true
		var err error
		if e.Upstream != "" {
			if e.upRe, err = regexp.Compile(`^(?s:` + e.Upstream + `)$`); err != nil {
				return nil, bad("upstream: " + err.Error())
			}
		}
		if e.Guestd != "" {
			if e.gdRe, err = regexp.Compile(`^(?s:` + e.Guestd + `)$`); err != nil {
				return nil, bad("guestd: " + err.Error())
			}
		}
	}
	return &a, nil
}

// Explain returns the entry that covers d in case name, or nil.
func (a *Allowlist) Explain(name string, d Difference) *Allowed {
	if a == nil {
		return nil
	}
	for i := range a.Entries {
		e := &a.Entries[i]
		if matchAny(e.Cases, name) && matchAny(e.Fields, d.Field) &&
			(e.upRe == nil || e.upRe.MatchString(d.Upstream)) &&
			(e.gdRe == nil || e.gdRe.MatchString(d.Guestd)) {
			return e
		}
	}
	return nil
}
