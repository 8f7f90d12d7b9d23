package osworld

import "testing"

func TestCompareURLs(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"https://www.airbnb.com", "https://airbnb.com/", true},
		{"https://www.airbnb.com.sg", "https://airbnb.com", true},
		{"www.lonelyplanet.com", "http://lonelyplanet.com", true},
		{"https://a.com/x?q=1", "https://a.com/x?q=2", false},
		{"https://maps.google.com", "https://google.com", false},
		{"file:///home/user/a.html", "file:///home/user/a.html", true},
		{"file:///home/user/a.html", "file:///home/user/b.html", false},
		{"HTTPS://A.COM/Path", "https://a.com/Path", true},
	} {
		if got := compareURLs(c.a, c.b, true); got != c.want {
			t.Errorf("compareURLs(%q, %q) = %v (%s vs %s)", c.a, c.b, got, normalizeURL(c.a, true), normalizeURL(c.b, true))
		}
	}
}
