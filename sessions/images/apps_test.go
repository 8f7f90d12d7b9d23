package images

import (
	"strings"
	"testing"
)

// defaults.list names Totem for videos always, and Evince for PDFs only
// where the image has Evince (GIMP would otherwise take them).
func TestAppDefaults(t *testing.T) {
	with, without := appDefaults(true), appDefaults(false)
	for name, d := range map[string]string{"with evince": with, "without": without} {
		if !strings.HasPrefix(d, "[Default Applications]\n") || !strings.Contains(d, "\nvideo/mp4="+VideoDefault+"\n") {
			t.Errorf("%s:\n%s", name, d)
		}
	}
	if !strings.Contains(with, "\napplication/pdf="+PDFDefault+"\n") {
		t.Errorf("with evince, no PDF default:\n%s", with)
	}
	if strings.Contains(without, "application/pdf") {
		t.Errorf("without evince, a PDF default:\n%s", without)
	}
}
