package osworld

import "fmt"

// ClickCode is the pyautogui code of a click on the centre of the element c
// names in tree (OSWorld's accessibility tree XML).
func ClickCode(tree string, c ElementClick) (string, error) {
	x, y, h, err := elementCentre(tree, c.Role, c.Name)
	if err != nil {
		return "", err
	}
	if c.Above > 0 {
		y -= h/2 + c.Above
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

// elementCentre finds the first element, in document order, with tag role
// and name attribute name, and returns the centre of its extents and its
// height.
func elementCentre(tree, role, name string) (int, int, int, error) {
	root, err := parseA11y(tree)
	if err != nil {
		return 0, 0, 0, err
	}
	found := root.find(role, name, nil)
	if root.tag == role && root.name == name {
		found = append([]*a11yNode{root}, found...)
	}
	if len(found) == 0 {
		return 0, 0, 0, fmt.Errorf("no %s named %q in the accessibility tree", role, name)
	}
	n := found[0]
	var x, y, w, h int
	if _, err := fmt.Sscanf(n.coord, "(%d, %d)", &x, &y); err != nil {
		return 0, 0, 0, fmt.Errorf("%s %q has no screen position (cp:screencoord %q)", role, name, n.coord)
	}
	if _, err := fmt.Sscanf(n.size, "(%d, %d)", &w, &h); err != nil {
		return 0, 0, 0, fmt.Errorf("%s %q has no size (cp:size %q)", role, name, n.size)
	}
	if w <= 0 || h <= 0 {
		return 0, 0, 0, fmt.Errorf("%s %q is not on the screen (size %dx%d)", role, name, w, h)
	}
	return x + w/2, y + h/2, h, nil
}
