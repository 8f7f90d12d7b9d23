package pyvalue

import (
	"encoding/base64"
	"testing"
	"unicode/utf8"

	"github.com/drums-dev/drums/internal/testutil"
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

// decodeCases are byte strings (hex-free, as Go literals) to decode.
var decodeCases = []string{
	"plain ascii",
	"é ü 日本 😀",
	"\xff",
	"ab\x80cd",
	"\xc0\xaf",
	"\xc3",
	"x\xe2\x82",
	"\xe2\x28\xa1",
	"\xe0\x80\x80",
	"\xed\xa0\x80",
	"\xf0\x90\x28\xbc",
	"\xf0\x9f\x98",
	"\xf4\x90\x80\x80",
	"\xf5\x80",
	"ok\xf0\x9f\x98\x80then\xfe",
	"\xc2\x41",
}

func TestDecodeUTF8(t *testing.T) {
	if _, err := DecodeUTF8([]byte("\xff")); err == nil || err.Error() != "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte" {
		t.Errorf("0xff: %v", err)
	}
	if _, err := DecodeUTF8([]byte("x\xe2\x82")); err == nil || err.Error() != "'utf-8' codec can't decode bytes in position 1-2: unexpected end of data" {
		t.Errorf("truncated: %v", err)
	}

	t.Run("cpython", func(t *testing.T) {
		script := `
import json, sys, base64
out = []
for c in json.load(sys.stdin):
    try: out.append(base64.b64decode(c).decode("utf-8") and "")
    except UnicodeDecodeError as e: out.append(str(e))
print(json.dumps(out))
`
		in := make([]string, len(decodeCases))
		for i, c := range decodeCases {
			in[i] = base64.StdEncoding.EncodeToString([]byte(c))
		}
		var want []string
		testutil.PythonOracle(t, script, in, &want)
		for i, c := range decodeCases {
			_, err := DecodeUTF8([]byte(c))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != want[i] {
				t.Errorf("decode %q: %q, Python %q", c, got, want[i])
			}
		}
	})
}

func TestText(t *testing.T) {
	cases := map[string]string{
		"a\r\nb\rc\nd": "a\nb\nc\nd",
		"\r\r\n\n":     "\n\n\n",
		"none":         "none",
	}
	for in, want := range cases {
		if got, err := Text([]byte(in)); err != nil || got != want {
			t.Errorf("Text(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
