package kubernetes

import (
	"strings"
	"testing"
)

func TestManifests(t *testing.T) {
	def, err := Manifests(Options{})
	if err != nil || def != manifest {
		t.Fatalf("no options: changed, or %v", err)
	}
	got, err := Manifests(Options{StateDir: "/s", ImageDir: "/i", RunDir: "/r", PublishPorts: "1000-1007", Capacity: 2, Image: "core",
		Args: []string{"--pool-size=0"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"{path: /s, type", "{path: /i, type", "{path: /r, type", "--publish-ports=1000-1007", "--capacity=2", "--image=core\n        - --pool-size=0\n        env:"} {
		if !strings.Contains(got, want) {
			t.Errorf("manifests lack %q", want)
		}
	}
	if !strings.Contains(got, "image: "+ImageName) {
		t.Errorf("the DaemonSet does not run %s", ImageName)
	}
}
