package images

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestPlanIDs(t *testing.T) {
	base := BuildOptions{Name: "core"}
	p, err := base.plan()
	if err != nil {
		t.Fatal(err)
	}
	if p.Recipe != "core" || p.Suite != DefaultSuite || p.Distro != "debian" || !slices.IsSorted(p.Packages) {
		t.Errorf("plan %+v", p)
	}
	if !slices.Contains(p.Sources, "deb http://deb.debian.org/debian-security bookworm-security main") ||
		!slices.Contains(p.Sources, "deb http://deb.debian.org/debian bookworm-updates main") {
		t.Errorf("sources %v: want the suite's updates and security archives", p.Sources)
	}
	// The same inputs, however spelled, are the same image; any input that
	// changes what is built is another.
	same := []BuildOptions{
		{Name: "other", Recipe: "core"},
		{Name: "core", Packages: []string{"xvfb", " sudo "}}, // already in the recipe
		{Name: "core", Suite: "bookworm"},
	}
	for _, o := range same {
		q, err := o.plan()
		if err != nil {
			t.Fatal(err)
		}
		if q.id() != p.id() {
			t.Errorf("%+v: id %s, want %s", o, q.id()[:12], p.id()[:12])
		}
	}
	ids := map[string]string{p.id(): "core"}
	for _, o := range []BuildOptions{
		{Name: "osworld"},
		{Name: "core", Suite: "trixie"},
		{Name: "core", Arch: "arm64"},
		{Name: "core", Packages: []string{"htop"}},
		{Name: "core", Mirrors: []string{"http://mirror.example/debian"}},
	} {
		q, err := o.plan()
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := ids[q.id()]; dup {
			t.Errorf("%+v has the id of %s", o, other)
		}
		ids[q.id()] = o.Name
	}
	osworld, _ := BuildOptions{Name: "osworld"}.plan()
	for _, pkg := range []string{"chromium", "libreoffice-calc", "gimp", "vlc", "thunderbird", "xvfb", "python3"} {
		if !slices.Contains(osworld.Packages, pkg) {
			t.Errorf("osworld lacks %s", pkg)
		}
	}
}

func TestPlanUbuntu(t *testing.T) {
	p, err := BuildOptions{Name: "osworld", Suite: "jammy"}.plan()
	if err != nil {
		t.Fatal(err)
	}
	if p.Distro != "ubuntu" || !slices.Contains(p.Sources, "deb http://archive.ubuntu.com/ubuntu jammy main universe") ||
		!slices.Contains(p.Sources, "deb http://archive.ubuntu.com/ubuntu jammy-security main universe") {
		t.Errorf("jammy: distro %s sources %v", p.Distro, p.Sources)
	}
	if slices.Contains(p.Packages, "chromium") || len(p.notes) != 1 {
		t.Errorf("jammy keeps the chromium snap package: %v, notes %v", p.Packages, p.notes)
	}
}

// A GNOME Shell recipe builds from bookworm, its default suite.
func TestPlanGNOMESuite(t *testing.T) {
	for _, suite := range []string{"", "bookworm"} {
		if p, err := (BuildOptions{Name: "x", Recipe: "osworld-gnome", Suite: suite}).plan(); err != nil || p.Suite != "bookworm" {
			t.Errorf("suite %q: %v", suite, err)
		}
	}
	_, err := BuildOptions{Name: "x", Recipe: "osworld-gnome", Suite: "trixie"}.plan()
	if err == nil || !strings.Contains(err.Error(), "GNOME Shell 43") {
		t.Errorf("trixie: %v, want the reason", err)
	}
}

func TestPlanBad(t *testing.T) {
	for _, o := range []BuildOptions{
		{Name: "../x"}, {Name: "Up"}, {Name: ""}, {Name: "a..b"},
		{Name: "x", Recipe: "nope"},
		{Name: "x", Suite: "bookworm main"},
		{Name: "x", Packages: []string{"-o Dpkg::x"}},
		{Name: "x", Packages: []string{"a,b"}},
		{Name: "x", Mirrors: []string{"ftp://x"}},
		{Name: "x", Recipe: "osworld-gnome", Suite: "jammy"},
		{Name: "x", Recipe: "osworld-gnome", Suite: "trixie"},
	} {
		if _, err := o.plan(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: %v, want ErrBadRequest", o, err)
		}
	}
}

// disk builds a disk image in memory: an MBR, and a GPT when gpt is set.
func disk(gpt bool, parts ...partition) []byte {
	const sectors = 4096
	b := make([]byte, sectors*sector)
	b[510], b[511] = 0x55, 0xAA
	if !gpt {
		for i, p := range parts {
			e := b[446+16*i:]
			typ := byte(0x83)
			if !p.Linux {
				typ = 0x0c
			}
			e[4] = typ
			binary.LittleEndian.PutUint32(e[8:], uint32(p.Start/sector))
			binary.LittleEndian.PutUint32(e[12:], uint32(p.Size/sector))
		}
		return b
	}
	b[446+4] = 0xEE
	hdr := b[sector:]
	copy(hdr, "EFI PART")
	binary.LittleEndian.PutUint64(hdr[72:], 2)
	binary.LittleEndian.PutUint32(hdr[80:], 128)
	binary.LittleEndian.PutUint32(hdr[84:], 128)
	for i, p := range parts {
		e := b[2*sector+128*i:]
		putGUID(e, p.Type)
		binary.LittleEndian.PutUint64(e[32:], uint64(p.Start/sector))
		binary.LittleEndian.PutUint64(e[40:], uint64((p.Start+p.Size)/sector-1))
		for j, c := range utf16.Encode([]rune(p.Name)) {
			binary.LittleEndian.PutUint16(e[56+2*j:], c)
		}
	}
	return b
}

func putGUID(b []byte, s string) {
	var raw []byte
	for _, c := range strings.ReplaceAll(s, "-", "") {
		raw = append(raw, byte(c))
	}
	hex := func(i int) byte {
		v := func(c byte) byte {
			if c >= 'A' {
				return c - 'A' + 10
			}
			return c - '0'
		}
		return v(raw[2*i])<<4 | v(raw[2*i+1])
	}
	var g [16]byte
	for i := range g {
		g[i] = hex(i)
	}
	binary.LittleEndian.PutUint32(b[0:], binary.BigEndian.Uint32(g[0:]))
	binary.LittleEndian.PutUint16(b[4:], binary.BigEndian.Uint16(g[4:]))
	binary.LittleEndian.PutUint16(b[6:], binary.BigEndian.Uint16(g[6:]))
	copy(b[8:16], g[8:16])
}

func TestPartitions(t *testing.T) {
	const efi = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
	const bios = "21686148-6449-6E6F-744E-656564454649"
	for _, c := range []struct {
		name  string
		disk  []byte
		index int
	}{
		// OSWorld's Ubuntu.qcow2: BIOS boot, EFI, then the root filesystem.
		{"gpt", disk(true,
			partition{Type: bios, Start: 2048 * sector, Size: 2048 * sector},
			partition{Type: efi, Start: 4096 * sector, Size: 1 << 20, Name: "EFI System Partition"},
			partition{Type: gptLinuxFS, Start: 8192 * sector, Size: 1 << 30}), 3},
		// A root partition type wins over a larger generic one.
		{"gpt root type", disk(true,
			partition{Type: gptLinuxFS, Start: 2048 * sector, Size: 8 << 30},
			partition{Type: "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709", Start: 4096 * sector, Size: 1 << 30}), 2},
		{"mbr", disk(false,
			partition{Start: 2048 * sector, Size: 1 << 20},
			partition{Linux: true, Start: 4096 * sector, Size: 1 << 30}), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			parts, err := partitions(bytes.NewReader(c.disk))
			if err != nil {
				t.Fatal(err)
			}
			root, err := rootPartition(parts)
			if err != nil {
				t.Fatal(err)
			}
			if root.Index != c.index {
				t.Errorf("root partition %d, want %d (%+v)", root.Index, c.index, parts)
			}
		})
	}
	if p, _ := partitions(bytes.NewReader(disk(true, partition{Type: gptLinuxFS, Start: 1 << 20, Size: 1 << 30, Name: "root"}))); len(p) != 1 ||
		p[0].Name != "root" || p[0].Type != gptLinuxFS || p[0].Start != 1<<20 || p[0].Size != 1<<30 {
		t.Errorf("GPT entry read as %+v", p)
	}
	if _, err := partitions(bytes.NewReader(make([]byte, 4096))); err == nil {
		t.Error("a disk without a table was read")
	}
	if _, err := rootPartition([]partition{{Index: 1, Type: "0x0c"}}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("no Linux partition: %v", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"core", "osworld", "my-image_2.1", "a"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../templates/default", "a/b", "Core", "-x", strings.Repeat("a", 64), "a..b"} {
		if err := CheckName(bad); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestProblems(t *testing.T) {
	var d Desktop
	for _, p := range parts {
		d.Parts = append(d.Parts, p.Part)
	}
	probs := d.Problems()
	var required int
	for _, p := range parts {
		if p.Required {
			required++
		}
	}
	if len(probs) != required+1 {
		t.Errorf("problems %q: want one per required part and the user", probs)
	}
	if !strings.Contains(strings.Join(probs, "\n"), "Xvfb is missing (the X server): install the package xvfb") {
		t.Errorf("problems do not say how to add Xvfb: %q", probs)
	}
	if fix := d.Fix(); !strings.Contains(fix, "--packages xvfb,dbus,openbox,at-spi2-core,python3,bash") {
		t.Errorf("fix %q", fix)
	}
	for i := range d.Parts {
		d.Parts[i].Path = "/x"
	}
	d.User = &User{Name: UserName, UID: UserID}
	if p := d.Problems(); len(p) != 0 {
		t.Errorf("a complete image has problems %q", p)
	}
}
