package pyvalue

import (
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

// jsonCases are request-like JSON documents; Jsonify(decode(x)) must equal
// Flask's debug-mode jsonify of json.loads(x).
var jsonCases = []string{
	`{"status": "success", "output": "hi\n", "error": "", "returncode": 0}`,
	`{"b": "é\u007f/😀", "a": 1, "A": [], "c": {}}`,
	`{"z": {"y": [1, 2.5, -0, 1e2, 1E-7, 0.1, 123456789012345678901234567890]}}`,
	`{"ctl": "\u0000\u0001\b\f\n\r\t\u001f \"\\ /", "uni": "日本語 \u2028 \ufeff \ud83d\ude00"}`,
	`[1, "two", null, true, false, [], {}]`,
	`{"wait_time": 1.0, "n": 10, "f": 10.50, "big": 1.7976931348623157e308, "tiny": 5e-324}`,
	`{"ü": 1, "u": 2, "z": 3, "Z": 4, "_": 5, "é": 6, "😀": 7, "ｚ": 8}`,
	`"just a string"`,
	`-0.0`,
}

func TestJsonifyMatchesFlask(t *testing.T) {
	// Hard-coded expectations, checked against Flask 3.1 in debug mode.
	fixed := map[string]string{
		jsonCases[0]: "{\n  \"error\": \"\",\n  \"output\": \"hi\\n\",\n  \"returncode\": 0,\n  \"status\": \"success\"\n}\n",
		jsonCases[1]: "{\n  \"A\": [],\n  \"a\": 1,\n  \"b\": \"\\u00e9\\u007f/\\ud83d\\ude00\",\n  \"c\": {}\n}\n",
		jsonCases[4]: "[\n  1,\n  \"two\",\n  null,\n  true,\n  false,\n  [],\n  {}\n]\n",
	}
	got := map[string]string{}
	for _, c := range jsonCases {
		v, err := Decode([]byte(c))
		if err != nil {
			t.Fatalf("decode %s: %v", c, err)
		}
		got[c] = string(Jsonify(v))
	}
	for in, want := range fixed {
		if got[in] != want {
			t.Errorf("Jsonify(%s) =\n%q\nwant\n%q", in, got[in], want)
		}
	}

	t.Run("flask", func(t *testing.T) {
		// Flask itself where it is installed, else json.dumps with the
		// arguments Flask's debug mode uses.
		script := `
import json, sys
cases = json.load(sys.stdin)
try:
    from flask import Flask
    app = Flask("t"); app.debug = True
    with app.app_context():
        dump = lambda v: app.json.response(v).get_data(as_text=True)
except ImportError:
    dump = lambda v: json.dumps(v, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
print(json.dumps([dump(json.loads(c)) for c in cases]))
`
		var want []string
		testutil.PythonOracle(t, script, jsonCases, &want)
		for i, c := range jsonCases {
			if got[c] != want[i] {
				t.Errorf("Jsonify(%s) =\n%q\nFlask:\n%q", c, got[c], want[i])
			}
		}
	})
}

func TestJsonifyNonUTF8(t *testing.T) {
	// A file name with an invalid byte comes out as Python's
	// surrogateescape'd lone surrogate.
	got := string(Jsonify(map[string]any{"name": "a\xffb"}))
	want := "{\n  \"name\": \"a\\udcffb\"\n}\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := string(Jsonify([]any{3, 4})); got != "[\n  3,\n  4\n]\n" {
		t.Errorf("cursor array: %q", got)
	}
}
