package pyvalue

import (
	"testing"
	"unicode/utf8"
)

// Expected values from Debian's python3: b.decode("utf-8", "replace").
func TestDecodeReplace(t *testing.T) {
	const r = "\uFFFD"
	for in, want := range map[string]string{
		"\xb9":             r,
		"\xb9\xb9":         r + r,
		"\xe2\x82":         r,
		"\xe2\x82a":        r + "a",
		"\xed\xa0\x80":     r + r + r,
		"\xf0\x9f\x98":     r,
		"\xf4\x90\x80\x80": r + r + r + r,
		"\xc0\xaf":         r + r,
		"a\xffb":           "a" + r + "b",
		"\xe0\x80\xaf":     r + r + r,
		"\xf0\x8f\xbf\xbf": r + r + r + r,
		"\xe2\x82\xac":     "€",
		"plain":            "plain",
	} {
		if got := DecodeReplace(in); got != want {
			t.Errorf("DecodeReplace(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzDecodeReplace(f *testing.F) {
	f.Add("a\xffb\xe2\x82")
	f.Fuzz(func(t *testing.T, s string) {
		if got := DecodeReplace(s); !utf8.ValidString(got) {
			t.Fatalf("DecodeReplace(%q) = %q, not UTF-8", s, got)
		}
	})
}
