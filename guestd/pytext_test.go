package guestd

import (
	"fmt"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

func TestPathHelpers(t *testing.T) {
	paths := []string{
		"~", "~/", "~/x/y", "~root/z", "~nosuchuser_zz/q", "x/~/y", "/abs", "",
		"$GUESTD_TEST_VAR/a", "${GUESTD_TEST_VAR}b", "$UNDEFINED_VAR_ZZ/c", "${}", "$", "a$b$$c",
		"$GUESTD_TEST_VAR$GUESTD_TEST_VAR", "${GUESTD_TEST_VAR", "$1abc",
		"//two", "///three", "/a//b/./c/", "./a", "a/../b", ".", "..", "/",
		"a.tar.gz", ".bashrc", "..hidden.txt", "dir.d/file", "a.", "/x/.y.z",
	}
	lookup := func(k string) (string, bool) {
		if k == "GUESTD_TEST_VAR" {
			return "value", true
		}
		return "", false
	}
	type pyPath struct {
		User, Vars, Pathlib, Root, Ext, Dir, Base string
	}
	got := make([]pyPath, len(paths))
	for i, p := range paths {
		root, ext := splitExt(p)
		got[i] = pyPath{expandUser(p, "/home/tester/"), expandVars(p, lookup), pathlibStr(p), root, ext, dirName(p), baseName(p)}
	}
	if got[2].User != "/home/tester/x/y" || got[0].User != "/home/tester" {
		t.Errorf("expandUser: %+v", got[:3])
	}
	t.Run("cpython", func(t *testing.T) {
		script := `
import json, os, sys, pathlib, posixpath
os.environ.clear(); os.environ["HOME"] = "/home/tester/"; os.environ["GUESTD_TEST_VAR"] = "value"
out = []
for p in json.load(sys.stdin):
    r, e = posixpath.splitext(p)
    out.append({"User": posixpath.expanduser(p), "Vars": posixpath.expandvars(p),
                "Pathlib": str(pathlib.PurePosixPath(p)), "Root": r, "Ext": e,
                "Dir": posixpath.dirname(p), "Base": posixpath.basename(p)})
print(json.dumps(out))
`
		var want []pyPath
		testutil.PythonOracle(t, script, paths, &want)
		for i, p := range paths {
			if diff := cmp.Diff(want[i], got[i]); diff != "" {
				t.Errorf("%q (-python +go):\n%s", p, diff)
			}
		}
	})
}

func TestCommandString(t *testing.T) {
	cases := []struct {
		cmd  command
		want string
	}{
		{command{list: []string{"sleep", "200"}}, "['sleep', '200']"},
		{command{shell: true, isStr: true, str: "sleep 200"}, "sleep 200"},
		{command{shell: true, list: []string{"it's", `a\b`}}, `["it's", 'a\\b']`},
	}
	for _, c := range cases {
		if got := fmt.Sprint(c.cmd); got != c.want {
			t.Errorf("%+v printed %s, want %s", c.cmd, got, c.want)
		}
	}
}
