package images

import (
	"strconv"
	"strings"
	"sync"
)

// Application settings the OSWorld recipes give the desktop so that a fresh
// session starts where a fresh OSWorld VM does (Ubuntu 22.04 with Chrome,
// VLC configured for OSWorld's getters): tasks score 0 before the agent acts.

// VLC's HTTP interface, as OSWorld's VM has it: its getters read
// http://VM:8080/requests/status.xml with the password "password".
const (
	VLCHTTPPort     = 8080
	VLCHTTPPassword = "password"
)

// vlcrc is ~/.config/vlc/vlcrc, the options OSWorld's VM set in VLC's
// preferences: the web interface on (extraintf=http) with its password,
// and the privacy question of VLC's first start answered. Each option is in
// its module's section, [core] last as VLC writes it (a task's setup
// appends core options to the end of the file). Options left out take
// VLC's defaults, which the vlc checkers also assume when a key is absent.
var vlcrc = sync.OnceValue(func() string {
	return strings.NewReplacer("@PORT@", strconv.Itoa(VLCHTTPPort), "@PASSWORD@", VLCHTTPPassword).Replace(vlcrcTemplate)
})

// vlcrcTemplate is vlcrc before its port and password are filled in.
const vlcrcTemplate = `###
### vlcrc: VLC's configuration, as an OSWorld guest has it (written by drums)
###

###
### lines beginning with a '#' character are comments
###

[qt] # Qt interface

# Do not ask about network policy at start (boolean)
qt-privacy-ask=0

[lua] # Lua interpreter

# Password (string)
http-password=@PASSWORD@

[core] # core program

# Extra interface modules (string)
extraintf=http

# HTTP server port (integer)
http-port=@PORT@
`

// VideoDefault is Ubuntu's default video player: GNOME Videos (Totem).
// OSWorld's get_default_video_player asks `xdg-mime query default video/X`
// for these types and takes the most common answer.
const VideoDefault = "org.gnome.Totem.desktop"

var videoTypes = []string{
	"3gp", "3gpp", "3gpp2", "avi", "divx", "dv", "fli", "flv", "mp2t", "mp4", "mp4v-es", "mpeg",
	"mpeg-system", "msvideo", "ogg", "quicktime", "vnd.divx", "vnd.mpegurl", "vnd.rn-realvideo", "webm",
	"x-anim", "x-avi", "x-flc", "x-fli", "x-flv", "x-m4v", "x-matroska", "x-mpeg", "x-mpeg-system",
	"x-mpeg2", "x-ms-asf", "x-ms-asf-plugin", "x-ms-asx", "x-ms-wm", "x-ms-wmv", "x-ms-wmx", "x-ms-wvx",
	"x-msvideo", "x-nsv", "x-ogm", "x-ogm+ogg", "x-theora", "x-theora+ogg",
}

// PDFDefault is Ubuntu's default PDF viewer: GNOME's Document Viewer.
const PDFDefault = "org.gnome.Evince.desktop"

// appDefaults is /usr/share/applications/defaults.list naming Totem for
// every video type, as Ubuntu's does, and Evince for PDFs where the image
// has it. xdg-mime returns a defaults.list entry without checking that the
// application exists; without one it would name the first player in
// mimeinfo.cache (VLC, when it is the only one), and a task that asks the
// agent to make VLC the default would be done before it starts. For PDFs
// that first one is GIMP, which imports the file instead of showing it, so
// a setup's "open" of a PDF waited for a window that never came
// (multi_apps/185f29bd, 5df7b33a). A user's choice (~/.config/mimeapps.list,
// written by `xdg-mime default`) still comes first.
func appDefaults(pdf bool) string {
	var b strings.Builder
	b.WriteString("[Default Applications]\n")
	for _, t := range videoTypes {
		b.WriteString("video/" + t + "=" + VideoDefault + "\n")
	}
	if pdf {
		b.WriteString("application/pdf=" + PDFDefault + "\n")
	}
	return b.String()
}

// libreofficeSettings seeds the user's LibreOffice profile (LibreOffice
// makes the rest of it on first start) with the Tip of the Day off, as on
// OSWorld's VM, whose LibreOffice had been started before. Otherwise the
// dialog opens over every first document and takes the keys that task
// setups send: libreoffice_impress/ef9d12bd's menu walk, meant to close the
// slide pane, went into the dialog and left the task solved before acting.
const libreofficeSettings = `<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
`

// libreofficeIcons makes Colibre LibreOffice's icon theme (GNOME images).
const libreofficeIcons = `<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="SymbolStyle" oor:op="fuse"><value>colibre</value></prop></item>
`

// pulseDefaults is read by PulseAudio after its default.pa, once
// module-always-sink has made the null sink a desktop without sound hardware
// gets. A new sink starts at 100%, where a fresh Ubuntu desktop's output is
// well below it; OSWorld's "turn the volume up to the max" task (os/28cc3b7e)
// would otherwise be solved before the agent acts.
const pulseDefaults = `# drums: the output volume a fresh desktop starts with (40%).
set-sink-volume @DEFAULT_SINK@ 26214
`

// vlcMailcap lets xdg-open play a video with VLC when Totem, which
// defaults.list names, is absent: xdg-open then asks run-mailcap, which reads
// /usr/local/etc/mailcap after /etc/mailcap (where Debian lists VLC for a few
// video types only, not MP4), and would otherwise open the file in the web
// browser.
const vlcMailcap = `# drums: videos without a rule in /etc/mailcap play in VLC (Totem is not installed).
video/*; vlc %s; test=test -n "$DISPLAY"
`

// chromeInitialPrefs are Google Chrome's first-run preferences on Linux:
// distribution settings only. Debian's Chromium ships its own, which set
// profile.default_content_setting_values, a home button and page, an
// always-shown bookmark bar and safe browsing off; OSWorld's getters read
// several of those from the profile (one task checks whether
// default_content_setting_values exists at all).
const chromeInitialPrefs = `{
  "distribution": {
    "import_bookmarks": false,
    "import_history": false,
    "import_search_engine": false,
    "make_chrome_default_for_user": false,
    "skip_first_run_ui": true,
    "suppress_first_run_default_browser_prompt": true
  }
}
`

// chromeLauncher runs Debian's Chromium as google-chrome. Chromium's own
// sandbox is off (--no-sandbox): it needs to create user namespaces, which
// a desktop's seccomp filter refuses to every process (the desktop, not the
// browser, is the boundary drums keeps; an agent is root in it anyway), and
// --test-type keeps Chromium from showing its "unsupported command-line
// flag" bar, which would move every page 57 pixels down from where OSWorld's
// Chrome shows it. Since version 136 Chromium ignores
// --remote-debugging-port with its default profile; OSWorld tasks start it
// with --remote-debugging-port=1337 and read the profile where Chrome keeps
// it, so the profile is ~/.config/google-chrome. DevTools clients from other
// origins (socat 9222 -> 1337, playwright) need --remote-allow-origins.
// Chromium 139 and later migrate a fresh profile to Local Network Access by
// writing profile.default_content_setting_values, which the Chrome of
// OSWorld's VM predates and one task's getter takes for "the user changed a
// content setting": the checks stay off, as in that Chrome.
//
// Tasks end the browser with `pkill chrome` (then relaunch it and read the
// profile it wrote on exit), which matches a process named chrome, as
// Google Chrome's are, and not chromium: the launcher runs Chromium's
// binary from chromeInSession (a hard link of it; a symlink would not do,
// Chromium re-executes itself through /proc/self/exe), with the
// flags Debian's /usr/bin/chromium reads from /etc/chromium.d.
const chromeLauncher = `#!/bin/sh
# drums: google-chrome for OSWorld tasks, served by Debian's Chromium under
# Chrome's process name.
profile=
devtools=
for a in "$@"; do
	case "$a" in
	--user-data-dir=*) profile=1 ;;
	--remote-debugging-port=*) devtools=1 ;;
	esac
done
[ -n "$profile" ] || set -- --user-data-dir="$HOME/.config/google-chrome" "$@"
[ -z "$devtools" ] || set -- --remote-allow-origins='*' "$@"
CHROMIUM_FLAGS=""
for f in /etc/chromium.d/*; do
	case "$f" in
	/etc/chromium.d/README | *.dpkg*) ;;
	*) . "$f" ;;
	esac
done
export CHROME_WRAPPER=/usr/local/bin/google-chrome CHROME_DESKTOP=chromium.desktop
[ ! -e ` + "/" + chromeNameShim + ` ] || export LD_PRELOAD="` + "/" + chromeNameShim + `${LD_PRELOAD:+ $LD_PRELOAD}"
exec /` + chromeInSession + ` $CHROMIUM_FLAGS --no-first-run --no-default-browser-check \
	--no-sandbox --test-type --password-store=basic --disable-features=LocalNetworkAccessChecks "$@"
`

// chromeNameSource is the library the launcher preloads so that Chromium's
// accessibility tree names its application "Google Chrome", as OSWorld's
// getters look for it (get_active_url_from_accessTree selects
// application[name=Google\ Chrome] on x86-64). Chromium's AT-SPI
// application is the root ATK object of views' AuraLinuxApplication, whose
// name is ViewsDelegate::GetApplicationName(), which Chrome's delegate
// answers with version_info::GetProductName(): PRODUCT_NAME, a constant
// compiled into the binary ("Chromium" in Debian's build, "Google Chrome"
// in Google's), which no flag, environment variable or resource changes.
// AT-SPI's ATK bridge (libatk-bridge, a library of its own) asks the name
// through libatk's atk_object_get_name; this library interposes that one
// function and answers "Google Chrome" for the root object only, and only
// where Chromium says "Chromium", so every other name, and every other
// program the browser starts, is what it was.
const chromeNameSource = `/* drums: Chromium's AT-SPI application answers as Google Chrome. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

typedef struct _AtkObject AtkObject;

const char *atk_object_get_name(AtkObject *obj)
{
	static const char *(*real)(AtkObject *);
	static AtkObject *(*root)(void);
	const char *name;

	if (!real) {
		real = (const char *(*)(AtkObject *))dlsym(RTLD_NEXT, "atk_object_get_name");
		root = (AtkObject *(*)(void))dlsym(RTLD_NEXT, "atk_get_root");
	}
	if (!real)
		return NULL;
	name = real(obj);
	if (name && root && strcmp(name, "Chromium") == 0 && obj == root())
		return "Google Chrome";
	return name;
}
`

// Debian's Chromium binary, and its hard link under Chrome's name.
const (
	chromiumBinary  = "usr/lib/chromium/chromium"
	chromeInSession = "usr/lib/chromium/chrome"
	chromeNameShim  = "usr/local/lib/drums/chrome-name.so"
)
