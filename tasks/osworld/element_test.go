package osworld

import (
	"strings"
	"testing"
)

// shellTree has the shape of a GNOME desktop's tree (guestd and OSWorld's
// main.py alike): GNOME Shell's application, whose hidden overview has a
// "Settings" button and a search text that are visible but not showing,
// hence without extents, and whose top bar has a showing text of no name;
// then the applications.
const shellTree = `<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" xmlns:cp="https://accessibility.ubuntu.example.org/ns/component">
<application name="gnome-shell"><window name="" st:showing="true" st:visible="true" cp:screencoord="(0, 0)" cp:size="(1920, 1080)">
<text name="" st:visible="true"></text>
<push-button name="Settings" st:visible="true"><label name="Settings" st:visible="true"></label></push-button>
<label name="Activities" st:showing="true" st:visible="true" cp:screencoord="(18, 4)" cp:size="(68, 18)"><text name="" st:showing="true" st:visible="true" cp:screencoord="(18, 4)" cp:size="(68, 18)">Activities</text></label>
<push-button name="Hidden" cp:screencoord="(5, 5)" cp:size="(0, 0)"></push-button>
</window></application>
<application name="Thunderbird"><frame name="Mail" st:showing="true" st:visible="true" cp:screencoord="(70, 27)" cp:size="(1850, 1053)">
<push-button name="Settings" st:showing="true" st:visible="true" cp:screencoord="(77, 998)" cp:size="(30, 30)"></push-button>
</frame></application>
<application name="vlc"><dialog name="Advanced Preferences" st:showing="true" st:visible="true" cp:screencoord="(595, 203)" cp:size="(800, 700)">
<text name="" st:showing="true" st:visible="true" cp:screencoord="(613, 221)" cp:size="(311, 21)"></text>
</dialog></application></desktop-frame>`

// clickCases are clicks on shellTree with the code each becomes, "" for
// an error: the first element on the screen, not a hidden one of the
// shell's that comes first; App for an element whose role and name the
// shell shares.
var clickCases = []struct {
	click ElementClick
	want  string
}{
	{ElementClick{Role: "push-button", Name: "Settings"}, `import pyautogui; pyautogui.click(92, 1013, clicks=1, button="left")`},
	{ElementClick{Role: "text", Name: ""}, `import pyautogui; pyautogui.click(52, 13, clicks=1, button="left")`},
	{ElementClick{Role: "text", Name: "", App: "vlc", Clicks: 3, Button: "right"}, `import pyautogui; pyautogui.click(768, 231, clicks=3, button="right")`},
	{ElementClick{Role: "push-button", Name: "Settings", App: "gnome-shell"}, ""},
	{ElementClick{Role: "push-button", Name: "Hidden"}, ""},
	{ElementClick{Role: "push-button", Name: "Settings", App: "nope"}, ""},
	{ElementClick{Role: "label", Name: "Nope"}, ""},
}

func TestClickCodeBesideShell(t *testing.T) {
	for _, c := range clickCases {
		code, err := ClickCode(shellTree, c.click)
		if c.want == "" {
			if err == nil {
				t.Errorf("%+v: ClickCode = %q, want an error", c.click, code)
			}
			continue
		}
		if err != nil || code != c.want {
			t.Errorf("%+v: ClickCode = %q, %v; want %q", c.click, code, err, c.want)
		}
	}
	_, err := ClickCode(strings.Replace(shellTree, `cp:screencoord="(77, 998)"`, "", 1), ElementClick{Role: "push-button", Name: "Settings"})
	if err == nil || !strings.Contains(err.Error(), "none of 2") {
		t.Errorf("no Settings button on the screen: err %v, want one counting both", err)
	}
}
