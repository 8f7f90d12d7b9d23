package browsertest

import (
	"testing"

	"github.com/drums-dev/drums/internal/testimage"
)

// Tier 1 runs in the osworld image: its Chromium, X server and noVNC.
func TestMain(m *testing.M) { testimage.MainInImage(m, "osworld") }
