package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/internal/testutil"
)

// entry is one tar entry of a test layer.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
	uid              int
	xattrs           map[string]string
}

func layerTar(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.uid, Linkname: e.link, Size: int64(len(e.body)), Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		for k, v := range e.xattrs {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["SCHILY.xattr."+k] = v
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// An untrusted layer cannot write outside the root, however its entries
// and links point.
func TestApplyLayerStaysInside(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	outside := filepath.Join(dir, "outside")
	os.Mkdir(root, 0o755)
	os.Mkdir(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o600)
	// Each attempt in a layer of its own: an entry that cannot be placed
	// inside the root fails its layer (a dangling link it would write
	// through), but none may land outside.
	for _, layer := range [][]entry{
		{{name: "escape", typ: tar.TypeSymlink, link: outside}, {name: "escape/a", body: "through an absolute link"}},
		{{name: "up", typ: tar.TypeSymlink, link: "../../outside"}, {name: "up/b", body: "through a relative link"}},
		{{name: "../../outside/c", body: "by dot-dot"}},
		{{name: "/outside/d", body: "absolute"}},
		{{name: "hard", typ: tar.TypeLink, link: "../../outside/secret"}},
		{{name: "escape/secret", typ: tar.TypeSymlink, link: "x"}},
	} {
		err := applyLayer(bytes.NewReader(layerTar(t, layer...)), root)
		if entries, _ := os.ReadDir(outside); len(entries) != 1 {
			t.Errorf("%s wrote outside the root: %v (apply: %v)", layer[len(layer)-1].name, entries, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "host" {
		t.Errorf("the host file now reads %q", b)
	}
	// What resolved inside the root is there, under it.
	for _, p := range []string{"outside/c", "outside/d"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "hard")); err == nil && os.SameFile(fi, mustStat(t, filepath.Join(outside, "secret"))) {
		t.Error("a hard link reached a file outside the root")
	}
}

func mustStat(t *testing.T, p string) os.FileInfo {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Layers apply in order: whiteouts delete, an opaque marker empties a
// directory of what lower layers put there; owners, modes, links, devices
// and file capabilities are kept.
func TestApplyLayers(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	lower := layerTar(t,
		entry{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "etc/gone", body: "x"},
		entry{name: "etc/kept", body: "lower"},
		entry{name: "opt/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "opt/old", body: "x"},
		entry{name: "usr/bin/ping", body: "elf", mode: 0o4755, uid: 0, xattrs: map[string]string{"security.capability": "\x01\x00\x00\x02\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}},
		entry{name: "home/user/f", body: "mine", uid: 1000, mode: 0o600},
		entry{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
	)
	upper := layerTar(t,
		entry{name: "etc/.wh.gone"},
		entry{name: "etc/kept", body: "upper"},
		entry{name: "opt/.wh..wh..opq"},
		entry{name: "opt/new", body: "y"},
		entry{name: "bin", typ: tar.TypeSymlink, link: "usr/bin"},
		entry{name: "ping2", typ: tar.TypeLink, link: "usr/bin/ping"},
	)
	for _, l := range [][]byte{lower, upper} {
		if err := applyLayer(bytes.NewReader(l), root); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(root, p)); return string(b) }
	if _, err := os.Lstat(filepath.Join(root, "etc/gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("whiteout: etc/gone %v", err)
	}
	if read("etc/kept") != "upper" || read("opt/new") != "y" {
		t.Errorf("kept %q new %q", read("etc/kept"), read("opt/new"))
	}
	if _, err := os.Lstat(filepath.Join(root, "opt/old")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("opaque: opt/old %v", err)
	}
	st := mustStat(t, filepath.Join(root, "home/user/f")).Sys().(*syscall.Stat_t)
	if st.Uid != 1000 || st.Mode&0o777 != 0o600 {
		t.Errorf("owner %d mode %o", st.Uid, st.Mode&0o777)
	}
	if st := mustStat(t, filepath.Join(root, "usr/bin/ping")); st.Mode()&os.ModeSetuid == 0 {
		t.Error("setuid bit lost")
	}
	if _, err := unix.Lgetxattr(filepath.Join(root, "usr/bin/ping"), "security.capability", make([]byte, 64)); err != nil {
		t.Errorf("file capability lost: %v", err)
	}
	if st := mustStat(t, filepath.Join(root, "dev/null")); st.Mode()&os.ModeCharDevice == 0 {
		t.Error("device node not made")
	}
	if l, _ := os.Readlink(filepath.Join(root, "bin")); l != "usr/bin" {
		t.Errorf("symlink %q", l)
	}
	if !os.SameFile(mustStat(t, filepath.Join(root, "ping2")), mustStat(t, filepath.Join(root, "usr/bin/ping"))) {
		t.Error("hard link is a copy")
	}
}

// fakeRoot is the part of a Debian root filesystem configure and the layer
// read: users, groups, a skeleton, service files.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"etc/passwd":        "root:x:0:0:root:/root:/bin/bash\nolduser:x:1000:1000::/home/olduser:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"etc/group":         "root:x:0:\nsudo:x:27:\naudio:x:29:\nshadow:x:42:\nolduser:x:1000:\n",
		"etc/shadow":        "root:*:19000:0:99999:7:::\nolduser:*:19000:0:99999:7:::\n",
		"etc/gshadow":       "root:*::\nsudo:*::\nolduser:!::\n",
		"etc/skel/.bashrc":  "# skel\n",
		"etc/skel/.profile": "# profile\n",
		"etc/os-release":    "PRETTY_NAME=\"Fake 1\"\n",
		"usr/share/dbus-1/services/org.gnome.Terminal.service": "[D-BUS Service]\nName=org.gnome.Terminal\n",
		"usr/bin/python3":                       "#!",
		"usr/bin/gnome-terminal":                "#!",
		"lib/systemd/systemd-timedated":         "#!",
		"usr/share/zoneinfo/" + OSWorldTimeZone: "TZif2",
	}
	for p, data := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestConfigureAndLayer(t *testing.T) {
	testutil.RequireRoot(t)
	root := fakeRoot(t)
	if err := configure(root, Recipes["osworld"]); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
		return string(b)
	}
	if passwd := read("etc/passwd"); !strings.Contains(passwd, "\nuser:x:1000:1000:") || strings.Contains(passwd, "olduser") {
		t.Errorf("passwd:\n%s", passwd)
	}
	if !strings.Contains(read("etc/shadow"), "\nuser:"+sha512Crypt("password", passwordSalt)+":") {
		t.Error("shadow: no password hash for user")
	}
	if g := read("etc/group"); !strings.Contains(g, "sudo:x:27:user") || !strings.Contains(g, "audio:x:29:user") {
		t.Errorf("group:\n%s", g)
	}
	if st := mustStat(t, filepath.Join(root, "etc/shadow")).Sys().(*syscall.Stat_t); st.Gid != 42 || st.Mode&0o777 != 0o640 {
		t.Errorf("shadow owned by gid %d mode %o", st.Gid, st.Mode&0o777)
	}
	if st := mustStat(t, filepath.Join(root, "etc/sudoers.d/drums-user")); st.Mode().Perm() != 0o440 {
		t.Errorf("sudoers mode %v", st.Mode())
	}
	if !strings.Contains(read("home/user/.bashrc"), "# skel") || !strings.Contains(read("home/user/.bashrc"), "Terminal") {
		t.Error(".bashrc is not the skeleton's with Terminal kept in the title")
	}
	for _, p := range []string{"home/user", "home/user/Desktop", "home/user/.config/vlc/vlcrc", "home/user/.profile"} {
		if st := mustStat(t, filepath.Join(root, p)).Sys().(*syscall.Stat_t); st.Uid != 1000 {
			t.Errorf("%s owned by %d", p, st.Uid)
		}
	}
	if d := read("usr/share/applications/defaults.list"); !strings.Contains(d, "\nvideo/mp4="+VideoDefault+"\n") {
		t.Errorf("defaults.list:\n%s", d)
	}
	vlc := read("home/user/.config/vlc/vlcrc")
	for _, want := range []string{"\nhttp-password=password\n", "\nextraintf=http\n", "\nhttp-port=8080\n", "\nqt-privacy-ask=0\n"} {
		if !strings.Contains(vlc, want) {
			t.Errorf("vlcrc lacks %q", want)
		}
	}
	if !strings.Contains(read("home/user/.config/libreoffice/4/user/registrymodifications.xcu"), `<prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value>`) {
		t.Error("LibreOffice's Tip of the Day is not off")
	}
	d := Inspect(root)
	if d.User == nil || d.User.UID != 1000 || d.User.Home != "/home/user" || len(d.User.Groups) != 2 {
		t.Errorf("user %+v", d.User)
	}
	if d.Path("python3") != "/usr/bin/python3" || d.Path("Xvfb") != "" {
		t.Errorf("parts: python3 %q Xvfb %q", d.Path("python3"), d.Path("Xvfb"))
	}

	layer := filepath.Join(t.TempDir(), "layer")
	if err := writeLayer(layer, root, d, Recipes["osworld"]); err != nil {
		t.Fatal(err)
	}
	readLayer := func(p string) string { b, _ := os.ReadFile(filepath.Join(layer, p)); return string(b) }
	if rc := readLayer("etc/xdg/openbox/rc.xml"); !strings.Contains(rc, `<keybind key="C-A-t"><action name="Execute"><command>env -u XCOMPOSEFILE gnome-terminal</command>`) {
		t.Errorf("openbox's Ctrl+Alt+T does not run the image's gnome-terminal:\n%s", rc)
	}
	if !strings.Contains(readLayer("etc/drums/session-bus.conf"), "<servicedir>/etc/drums/dbus-services</servicedir>") ||
		readLayer("etc/drums/dbus-services/org.gnome.Terminal.service") == "" {
		t.Error("session bus: configuration or the terminal's service missing")
	}
	if h := readLayer("etc/hosts"); !strings.Contains(h, "127.0.0.1\tlocalhost") || !strings.Contains(h, "127.0.1.1\tdrums") {
		t.Errorf("hosts:\n%s", h)
	}
	// The osworld recipe's system services: the image's timedated only
	// (it has no hostnamed or localed), and its time zone.
	if !strings.Contains(readLayer(SystemBusConf), "<servicedir>/etc/drums/system-services</servicedir>") ||
		readLayer("etc/drums/system-services/org.freedesktop.timedate1.service") != "[D-BUS Service]\nName=org.freedesktop.timedate1\nExec=/lib/systemd/systemd-timedated\nUser=root\n" ||
		readLayer("etc/drums/system-services/org.freedesktop.hostname1.service") != "" {
		t.Error("system bus: configuration or its services wrong")
	}
	if target, err := os.Readlink(filepath.Join(layer, "etc/localtime")); err != nil || target != "/usr/share/zoneinfo/"+OSWorldTimeZone || readLayer("etc/timezone") != OSWorldTimeZone+"\n" {
		t.Errorf("time zone: localtime -> %q %v, timezone %q", target, err, readLayer("etc/timezone"))
	}
	coreLayer := filepath.Join(t.TempDir(), "core")
	if err := writeLayer(coreLayer, root, d, Recipes["core"]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(coreLayer, "etc/localtime")); !os.IsNotExist(err) {
		t.Errorf("core's layer has a time zone: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(layer, "usr/share/gnome-shell")); !os.IsNotExist(err) {
		t.Errorf("osworld's layer has GNOME Shell's files: %v", err)
	}
	// The GNOME profile's: Ubuntu's session mode with the dock and the
	// terminal extension, whose Ctrl+Alt+T runs the image's terminal.
	gnomeLayer := filepath.Join(t.TempDir(), "gnome")
	if err := writeLayer(gnomeLayer, root, d, Recipes["osworld-gnome"]); err != nil {
		t.Fatal(err)
	}
	readGNOME := func(p string) string { b, _ := os.ReadFile(filepath.Join(gnomeLayer, p)); return string(b) }
	if m := readGNOME("usr/share/gnome-shell/modes/ubuntu.json"); !strings.Contains(m, `"dash-to-dock@micxgx.gmail.com", "drums@drums"`) ||
		!strings.Contains(m, `"stylesheetName": "Yaru/gnome-shell.css"`) {
		t.Errorf("session mode:\n%s", m)
	}
	if js := readGNOME("usr/share/gnome-shell/extensions/drums@drums/extension.js"); !strings.Contains(js, "create_from_commandline(`gnome-terminal`") {
		t.Errorf("terminal extension:\n%s", js)
	}
	if target, err := os.Readlink(filepath.Join(layer, "usr/local/bin/python")); err != nil || target != "/usr/bin/python3" {
		t.Errorf("python -> %q %v", target, err)
	}
	// Directories the layer makes keep the image's modes: an overlay takes
	// a directory's attributes from its topmost layer.
	os.Chmod(filepath.Join(root, "etc"), 0o755)
	if st := mustStat(t, filepath.Join(layer, "etc")); st.Mode().Perm() != 0o755 {
		t.Errorf("layer's etc is %v", st.Mode())
	}
	if st := mustStat(t, filepath.Join(layer, GuestdPath)); !st.Mode().IsRegular() || st.Mode().Perm() != 0o755 {
		t.Errorf("guestd placeholder %v", st.Mode())
	}
}

// configure writes GNOME Shell's settings for a recipe whose shell is
// GNOME Shell, and not for one on openbox even where the image holds
// gnome-shell (a package that pulled it in, an --add).
func TestConfigureGNOME(t *testing.T) {
	testutil.RequireRoot(t)
	chromium, err := os.ReadFile("/bin/true") // an ELF of the host's architecture
	if err != nil {
		t.Fatal(err)
	}
	gnomeFiles := []string{
		"home/user/.local/share/gnome-shell/lock-warning-shown",
		"etc/dconf/db/drums.d/10-gnome",
		"usr/local/share/applications/google-chrome.desktop",
	}
	for _, tc := range []struct {
		recipe string
		gnome  bool
	}{{"osworld", false}, {"osworld-gnome", true}} {
		root := fakeRoot(t)
		for p, data := range map[string][]byte{"usr/bin/gnome-shell": []byte("#!"), chromiumBinary: chromium} {
			os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
			if err := os.WriteFile(filepath.Join(root, p), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := configure(root, Recipes[tc.recipe]); err != nil {
			t.Fatalf("%s: %v", tc.recipe, err)
		}
		for _, p := range gnomeFiles {
			if _, err := os.Stat(filepath.Join(root, p)); (err == nil) != tc.gnome {
				t.Errorf("%s: %s: %v", tc.recipe, p, err)
			}
		}
		lo, err := os.ReadFile(filepath.Join(root, "home/user/.config/libreoffice/4/user/registrymodifications.xcu"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(lo), libreofficeIcons) != tc.gnome {
			t.Errorf("%s: LibreOffice's Colibre icons %v, want %v", tc.recipe, !tc.gnome, tc.gnome)
		}
	}
}

// A store reuses an image of the same id, names it, refuses to remove one
// a desktop holds, and leaves nothing of a failed or interrupted build.
func TestStore(t *testing.T) {
	testutil.RequireRoot(t)
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(t.TempDir(), "root.tar.gz")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(layerTar(t, entry{name: "etc/os-release", body: "PRETTY_NAME=\"Tiny\"\n"}, entry{name: "bin/sh", body: "#!", mode: 0o755}))
	zw.Close()
	os.WriteFile(tarball, gz.Bytes(), 0o644)
	ctx := context.Background()
	im, err := st.Import(ctx, ImportOptions{Name: "tiny", File: tarball})
	if err != nil {
		t.Fatal(err)
	}
	if im.OS != "Tiny" || im.Source.Format != FormatTar || len(im.Desktop.Problems()) == 0 {
		t.Errorf("imported %+v", im)
	}
	sum := sha256.Sum256(gz.Bytes())
	if im.Source.SHA256 != hex.EncodeToString(sum[:]) || im.ID != importID(FormatTar, im.Source.SHA256) {
		t.Errorf("id %s sha %s", im.ID, im.Source.SHA256)
	}
	again, err := st.Import(ctx, ImportOptions{Name: "tiny2", File: tarball})
	if err != nil || again.ID != im.ID || strings.Join(again.Names, ",") != "tiny,tiny2" {
		t.Fatalf("second import: %+v %v", again, err)
	}
	for _, ref := range []string{"tiny", im.ID, im.ID[:12]} {
		if got, err := st.Get(ref); err != nil || got.ID != im.ID {
			t.Errorf("Get(%s): %v", ref, err)
		}
	}
	if _, err := st.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(nope): %v", err)
	}
	hold, err := Hold(im.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Remove("tiny2"); err != nil { // a name of two goes alone
		t.Fatal(err)
	}
	if err := st.Remove("tiny"); !errors.Is(err, ErrBusy) {
		t.Errorf("remove of a held image: %v", err)
	}
	hold.Close()
	if err := st.Remove("tiny"); err != nil {
		t.Fatal(err)
	}
	if list, _ := st.List(); len(list) != 0 {
		t.Errorf("left %v", list)
	}
	// A name moved to another image takes the old one along, unless a
	// desktop runs from it.
	other := filepath.Join(t.TempDir(), "other.tar")
	os.WriteFile(other, layerTar(t, entry{name: "bin/sh", body: "#!", mode: 0o755}), 0o644)
	first, err := st.Import(ctx, ImportOptions{Name: "swap", File: tarball})
	if err != nil {
		t.Fatal(err)
	}
	if hold, err = Hold(first.Dir()); err != nil {
		t.Fatal(err)
	}
	second, err := st.Import(ctx, ImportOptions{Name: "swap", File: other})
	if err != nil {
		t.Fatal(err)
	}
	if kept, err := st.Get(first.ID); err != nil || len(kept.Names) != 0 {
		t.Errorf("the held image after its name moved: %+v %v", kept, err)
	}
	hold.Close()
	if _, err := st.Import(ctx, ImportOptions{Name: "swap", File: tarball}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(second.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the image whose name moved stayed: %v", err)
	}
	if err := st.Remove("swap"); err != nil {
		t.Fatal(err)
	}
	// A broken input installs nothing, and a crashed build's directory goes
	// at the next Open.
	bad := filepath.Join(t.TempDir(), "bad.tar")
	os.WriteFile(bad, append(layerTar(t, entry{name: "a", body: "x"})[:600], make([]byte, 1024)...), 0o644)
	if _, err := st.Import(ctx, ImportOptions{Name: "bad", File: bad, Format: FormatTar}); err == nil {
		t.Error("a truncated tar imported")
	}
	os.MkdirAll(filepath.Join(st.Dir(), "tmp", "build-crashed", "rootfs"), 0o755)
	if _, err := Open(st.Dir()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"tmp", "store", "names"} {
		if entries, _ := os.ReadDir(filepath.Join(st.Dir(), d)); len(entries) != 0 {
			t.Errorf("%s holds %v", d, entries)
		}
	}
}

// OCI layouts and docker save archives apply their layers in order.
func TestImportLayouts(t *testing.T) {
	testutil.RequireRoot(t)
	base := layerTar(t, entry{name: "etc/os-release", body: "PRETTY_NAME=\"Base\"\n"}, entry{name: "etc/gone", body: "x"})
	top := layerTar(t, entry{name: "etc/.wh.gone"}, entry{name: "etc/top", body: "top"})
	blob := func(dir string, b []byte) string {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755)
		os.WriteFile(filepath.Join(dir, "blobs", "sha256", h), b, 0o644)
		return "sha256:" + h
	}
	js := func(v any) []byte { b, _ := json.Marshal(v); return b }
	oci := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(base)
	zw.Close()
	manifest := js(map[string]any{"schemaVersion": 2, "layers": []map[string]string{
		{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": blob(oci, gz.Bytes())},
		{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": blob(oci, top)},
	}})
	os.WriteFile(filepath.Join(oci, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
	os.WriteFile(filepath.Join(oci, "index.json"), js(map[string]any{"schemaVersion": 2,
		"manifests": []map[string]any{{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": blob(oci, manifest),
			"platform": map[string]string{"os": "linux", "architecture": "amd64"}}}}), 0o644)

	docker := t.TempDir()
	os.MkdirAll(filepath.Join(docker, "l1"), 0o755)
	os.MkdirAll(filepath.Join(docker, "l2"), 0o755)
	os.WriteFile(filepath.Join(docker, "l1", "layer.tar"), base, 0o644)
	os.WriteFile(filepath.Join(docker, "l2", "layer.tar"), top, 0o644)
	os.WriteFile(filepath.Join(docker, "manifest.json"), js([]map[string]any{{"Config": "c.json", "Layers": []string{"l1/layer.tar", "l2/layer.tar"}}}), 0o644)
	dockerTar := filepath.Join(t.TempDir(), "saved.tar")
	writeDirTar(t, docker, dockerTar)
	ociTar := filepath.Join(t.TempDir(), "oci.tar")
	writeDirTar(t, oci, ociTar)

	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, format string }{{oci, FormatOCI}, {ociTar, FormatOCI}, {dockerTar, FormatDocker}} {
		im, err := st.Import(context.Background(), ImportOptions{Name: "x", File: c.file})
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		root := im.RootFS()
		if b, _ := os.ReadFile(filepath.Join(root, "etc/top")); string(b) != "top" || im.OS != "Base" || im.Source.Format != c.format {
			t.Errorf("%s: top %q os %q format %s", c.file, b, im.OS, im.Source.Format)
		}
		if _, err := os.Lstat(filepath.Join(root, "etc/gone")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: whiteout not applied: %v", c.file, err)
		}
		if err := st.Remove(im.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// writeDirTar writes a tar of dir's files (as `docker save` or an OCI
// archive would).
func writeDirTar(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	defer tw.Close()
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
}
