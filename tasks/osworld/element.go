package osworld

import "fmt"

// ClickCode is the pyautogui code of a click on the centre of the element c
// names in tree (OSWorld's accessibility tree XML).
func ClickCode(tree string, c ElementClick) (string, error) {
	x, y, err := elementCentre(tree, c)
	if err != nil {
		return "", err
	}
	clicks, button := c.Clicks, c.Button
	if clicks == 0 {
		clicks = 1
	}
	if button == "" {
		button = "left"
	}
	return fmt.Sprintf("import pyautogui; pyautogui.click(%d, %d, clicks=%d, button=%q)", x, y, clicks, button), nil
}

// elementCentre finds the first element, in document order, with tag
// c.Role and name attribute c.Name (inside the application c.App when set)
// that is on the screen, and returns the centre of its extents. An element
// the tree gives no position is not on the screen: the server reads
// extents only for elements both visible and showing, and an agent that
// reads the tree through OSWorld's filter (heuristic_retrieve's
// judge_node: showing, visible, a positive size) never sees it either.
func elementCentre(tree string, c ElementClick) (int, int, error) {
	root, err := parseA11y(tree)
	if err != nil {
		return 0, 0, err
	}
	scopes, where := []*a11yNode{root}, "the accessibility tree"
	if c.App != "" {
		where = fmt.Sprintf("application %q", c.App)
		if scopes = root.findSelf("application", c.App, nil); len(scopes) == 0 {
			return 0, 0, fmt.Errorf("no %s in the accessibility tree", where)
		}
	}
	var found []*a11yNode
	for _, s := range scopes {
		found = s.findSelf(c.Role, c.Name, found)
	}
	if len(found) == 0 {
		return 0, 0, fmt.Errorf("no %s named %q in %s", c.Role, c.Name, where)
	}
	var firstErr error
	for _, n := range found {
		x, y, w, h, err := n.extents()
		if err == nil {
			return x + w/2, y + h/2, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return 0, 0, fmt.Errorf("%s %q: none of %d in %s is on the screen, the first %w", c.Role, c.Name, len(found), where, firstErr)
}

// extents is n's position and size on the screen, or why it has none.
func (n *a11yNode) extents() (x, y, w, h int, err error) {
	if _, err := fmt.Sscanf(n.coord, "(%d, %d)", &x, &y); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("has no screen position (cp:screencoord %q)", n.coord)
	}
	if _, err := fmt.Sscanf(n.size, "(%d, %d)", &w, &h); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("has no size (cp:size %q)", n.size)
	}
	if w <= 0 || h <= 0 {
		return 0, 0, 0, 0, fmt.Errorf("has size %dx%d", w, h)
	}
	return x, y, w, h, nil
}
