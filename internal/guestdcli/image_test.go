package guestdcli

import (
	"testing"

	"github.com/drums-dev/drums/internal/testimage"
)

// Tier 1 runs in the core image: its X server, toolkits and Python.
func TestMain(m *testing.M) { testimage.MainInImage(m, "core") }
