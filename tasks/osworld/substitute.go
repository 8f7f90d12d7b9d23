package osworld

import (
	"fmt"
	"strings"
)

// Screen is what {SCREEN_*} placeholders and {CLIENT_PASSWORD} expand to.
type Screen struct {
	Width, Height int
	Password      string // OSWorld's client_password: "password" on its VMs
}

// Substitute is SetupController._execute_setup's placeholder replacement
// on a string command or on each element of a list command, in OSWorld's
// order ({CLIENT_PASSWORD}, {SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF},
// {SCREEN_WIDTH}, {SCREEN_HEIGHT}). A list element that is not a string is
// an error, as Python's str.replace on it would be.
func Substitute(command any, s Screen) (any, error) {
	rep := func(x string) string {
		x = strings.ReplaceAll(x, "{CLIENT_PASSWORD}", s.Password)
		x = strings.ReplaceAll(x, "{SCREEN_WIDTH_HALF}", fmt.Sprint(s.Width/2))
		x = strings.ReplaceAll(x, "{SCREEN_HEIGHT_HALF}", fmt.Sprint(s.Height/2))
		x = strings.ReplaceAll(x, "{SCREEN_WIDTH}", fmt.Sprint(s.Width))
		x = strings.ReplaceAll(x, "{SCREEN_HEIGHT}", fmt.Sprint(s.Height))
		return x
	}
	switch c := command.(type) {
	case string:
		return rep(c), nil
	case []any:
		out := make([]any, len(c))
		for i, e := range c {
			str, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("command element %d is %T, not a string", i, e)
			}
			out[i] = rep(str)
		}
		return out, nil
	case []string:
		out := make([]any, len(c))
		for i, e := range c {
			out[i] = rep(e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("command is %T, neither a string nor a list", command)
}

// CommandWords renders a command for messages and classification: a list's
// elements joined by spaces, a string as is.
func CommandWords(command any) string {
	switch c := command.(type) {
	case string:
		return c
	case []any:
		parts := make([]string, 0, len(c))
		for _, e := range c {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, " ")
	case []string:
		return strings.Join(c, " ")
	}
	return fmt.Sprint(command)
}
