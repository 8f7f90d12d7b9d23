package testutil

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Golden compares got, a rendered text a person reviews (testdata/*.golden),
// with the file at path; with update (a test's -update flag) it rewrites the
// file first.
func Golden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got; review, then go test -update):\n%s", path, d)
	}
}
