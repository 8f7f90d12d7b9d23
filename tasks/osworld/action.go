package osworld

import (
	"encoding/json"
	"fmt"
)

// Action is one step of a task's scripted solution, as an agent would take
// it: a pyautogui command (a JSON string), sent the way DesktopEnv.step
// sends it, or one of DesktopEnv.step's special actions ("WAIT", "DONE",
// "FAIL"); a click on an accessibility element named by role and name
// ({"click": {"role": "push-button", "name": "OK"}}), which becomes a
// pyautogui click at the element's centre in the tree observed just before
// it, as an agent that reads the tree would send; or a shell step (a JSON
// object in the form of a setup step, such as {"type": "execute",
// "parameters": {...}}).
type Action struct {
	Code  string
	Click *ElementClick
	Step  *Step
}

// ElementClick names the accessibility element a click action aims at: the
// first element of the tree, in document order, with this tag (the role,
// as OSWorld's tree spells it) and name attribute that is on the screen,
// inside the application element named App when App is set; and at least
// this many clicks of this button (pyautogui's defaults: 1, "left"), on
// the element's centre.
//
// The tree holds every application, the desktop shell's too (GNOME
// Shell's hidden overview has a "Settings" button and an unnamed search
// text), in an order upstream's server leaves to its threads: App is how a
// solution names an element whose role and name alone are not the
// application's own.
type ElementClick struct {
	Role   string `json:"role"`
	Name   string `json:"name"`
	App    string `json:"app,omitempty"`
	Clicks int    `json:"clicks,omitempty"`
	Button string `json:"button,omitempty"`
}

// The special actions of DesktopEnv.step, which run no code.
const (
	ActionWait = "WAIT"
	ActionDone = "DONE"
	ActionFail = "FAIL"
)

// UnmarshalJSON reads every form.
func (a *Action) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*a = Action{Code: s}
		return nil
	}
	var c struct {
		Click *ElementClick `json:"click"`
	}
	if json.Unmarshal(b, &c) == nil && c.Click != nil {
		if c.Click.Role == "" {
			return fmt.Errorf("solution click names no role")
		}
		*a = Action{Click: c.Click}
		return nil
	}
	var st Step
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("solution action is neither a pyautogui string, a click nor a step: %w", err)
	}
	if st.Type == "" {
		return fmt.Errorf("solution step has no type")
	}
	*a = Action{Step: &st}
	return nil
}

// MarshalJSON writes the form it was read in.
func (a Action) MarshalJSON() ([]byte, error) {
	switch {
	case a.Step != nil:
		return json.Marshal(a.Step)
	case a.Click != nil:
		return json.Marshal(map[string]any{"click": a.Click})
	}
	return json.Marshal(a.Code)
}

// LastFails says whether a solution ends with FAIL, the answer OSWorld's
// infeasible metric scores 1.
func LastFails(actions []Action) bool {
	return len(actions) > 0 && actions[len(actions)-1].Code == ActionFail
}
