package images

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AptCacheDir keeps the packages that builds downloaded, so that the next
// build (core and osworld share most packages; a --rebuild all of them)
// takes them from disk.
const AptCacheDir = "/var/cache/drums/apt"

// Build builds the image o describes with mmdebstrap, or reuses the one the
// same inputs built before, and names it o.Name. A failed or interrupted
// build installs nothing.
func (s *Store) Build(ctx context.Context, o BuildOptions) (*Image, error) {
	p, err := o.plan()
	if err != nil {
		return nil, err
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	id := p.id()
	for _, n := range p.notes {
		progress("note: " + n)
	}
	if !o.Rebuild {
		if im, err := s.reuse(id, o.Name); err == nil || !errors.Is(err, ErrNotFound) {
			if err == nil {
				progress(fmt.Sprintf("image %s exists (%s): reused", im.ShortID(), o.Name))
			}
			return im, err
		}
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("building an image needs root (mmdebstrap's root mode): %w", ErrUnsupported)
	}
	mmdebstrap, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return nil, fmt.Errorf("mmdebstrap is not installed (apt-get install mmdebstrap; make deps does): %w", ErrUnsupported)
	}
	b, err := s.newBuild()
	if err != nil {
		return nil, err
	}
	defer b.discard()
	started := time.Now()
	step := func(format string, args ...any) {
		progress(fmt.Sprintf("%6.1fs  ", time.Since(started).Seconds()) + fmt.Sprintf(format, args...))
	}
	step("build %s (recipe %s, %s %s, %d packages) as image %s", o.Name, p.Recipe, p.Suite, p.Arch, len(p.Packages), id[:12])
	rootfs := filepath.Join(b.dir, "rootfs")
	args, err := p.mmdebstrapArgs(rootfs)
	if err != nil {
		return nil, err
	}
	if err := runLogged(ctx, step, "mmdebstrap", mmdebstrap, args...); err != nil {
		return nil, fmt.Errorf("build %s: %w: %w", o.Name, err, ErrBuild)
	}
	step("configure the OSWorld user, locale and applications")
	if err := configure(rootfs, Recipes[p.Recipe]); err != nil {
		return nil, fmt.Errorf("build %s: configure: %w: %w", o.Name, err, ErrBuild)
	}
	im := &Image{ID: id, Source: Source{Kind: "build", Recipe: p.Recipe, Suite: p.Suite, Mirror: strings.Join(p.Sources, "; "),
		Arch: p.Arch, Packages: p.Packages}}
	if err := s.install(b, im, o.Name, o.Rebuild); err != nil {
		return nil, err
	}
	step("installed image %s as %s: %s, %d packages", im.ShortID(), o.Name, HumanSize(im.Size), im.Packages)
	return im, nil
}

// reuse names an installed image and returns it, or ErrNotFound.
func (s *Store) reuse(id, name string) (*Image, error) {
	if _, err := os.Stat(filepath.Join(s.imageDir(id), "image.json")); err != nil {
		return nil, fmt.Errorf("image %s: %w", id, ErrNotFound)
	}
	lk, err := lockFile(filepath.Join(s.dir, "lock"), true)
	if err != nil {
		return nil, err
	}
	err = s.setName(name, id)
	lk.Close()
	if err != nil {
		return nil, err
	}
	return s.Get(id)
}

// mmdebstrapArgs builds the root filesystem at rootfs: Debian's Essential
// set, apt and the plan's packages, without Recommends, documentation,
// manual pages or translations other than English; the packages it
// downloads are kept in AptCacheDir for the next build.
func (p *plan) mmdebstrapArgs(rootfs string) ([]string, error) {
	if err := os.MkdirAll(AptCacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", AptCacheDir, err)
	}
	args := []string{"--mode=root", "--variant=apt", "--arch=" + p.Arch, "--format=directory",
		"--include=" + strings.Join(p.Packages, ","),
		"--aptopt=Acquire::Languages \"none\"",
		"--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/info/*",
		"--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-include=/usr/share/doc/*/copyright",
		"--dpkgopt=path-exclude=/usr/share/locale/*",
		"--dpkgopt=path-include=/usr/share/locale/en*",
		"--dpkgopt=path-include=/usr/share/locale/locale.alias",
		"--skip=essential/unlink",
		"--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
		"--setup-hook=sync-in " + AptCacheDir + " /var/cache/apt/archives/",
		"--customize-hook=sync-out /var/cache/apt/archives " + AptCacheDir,
	}
	if p.Distro == "ubuntu" {
		const keyring = "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
		if _, err := os.Stat(keyring); err != nil {
			return nil, fmt.Errorf("an Ubuntu suite needs %s (apt-get install ubuntu-keyring): %w", keyring, ErrUnsupported)
		}
		args = append(args, "--keyring="+keyring)
	}
	args = append(args, p.Suite, rootfs)
	// Each source as its own argument: mmdebstrap takes one-line sources
	// verbatim.
	args = append(args, p.Sources...)
	return args, nil
}

// runLogged runs a command in a private mount namespace (what it mounts,
// /proc and /dev in a chroot, goes when it ends, even killed), in its own
// process group (cancelling ctx kills the whole group), passing each line
// it prints to step, and quoting its last lines when it fails.
func runLogged(ctx context.Context, step func(string, ...any), what, path string, args ...string) error {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return fmt.Errorf("unshare (util-linux) is not installed: %w", ErrUnsupported)
	}
	cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "--", path}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/root", "TMPDIR=/tmp"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", what, err)
	}
	stop := context.AfterFunc(ctx, func() { unix.Kill(-cmd.Process.Pid, unix.SIGKILL) })
	defer stop()
	var last []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		step("%s: %s", what, line)
		if last = append(last, line); len(last) > 15 {
			last = last[1:]
		}
	}
	io.Copy(io.Discard, out)
	err = cmd.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("%s: %w:\n\t%s", what, err, strings.Join(last, "\n\t"))
	}
	return nil
}

// building is a build directory under tmp/, locked while the build lives.
type building struct {
	dir  string
	lock *os.File
}

func (s *Store) newBuild() (*building, error) {
	dir, err := os.MkdirTemp(filepath.Join(s.dir, "tmp"), "build-")
	if err != nil {
		return nil, fmt.Errorf("create build directory: %w", err)
	}
	lk, err := lockFile(filepath.Join(dir, "lock"), false)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		lk.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chmod build directory: %w", err)
	}
	return &building{dir: dir, lock: lk}, nil
}

// discard removes what is left of the build (everything, unless it was
// installed).
func (b *building) discard() {
	os.RemoveAll(b.dir)
	b.lock.Close()
}

// install completes im from the build's root filesystem (its desktop
// parts, size, packages, drums' layer), moves it into the store and names
// it. An image of the same id is replaced only with replace, and only when
// no desktop runs from it.
func (s *Store) install(b *building, im *Image, name string, replace bool) error {
	rootfs := filepath.Join(b.dir, "rootfs")
	if err := os.Chmod(rootfs, 0o755); err != nil {
		return fmt.Errorf("chmod root filesystem: %w", err)
	}
	im.Created = time.Now().UTC()
	im.OS = osName(rootfs)
	im.Desktop = Inspect(rootfs)
	im.Packages = countPackages(rootfs)
	var err error
	if im.Size, err = diskUsage(rootfs); err != nil {
		return err
	}
	if err := writeLayer(filepath.Join(b.dir, im.LayerDir()), rootfs, im.Desktop, im.recipe()); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(b.dir, "image.json"), im); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(b.dir, "lock")); err != nil {
		return fmt.Errorf("remove build lock: %w", err)
	}
	lk, err := lockFile(filepath.Join(s.dir, "lock"), true)
	if err != nil {
		return err
	}
	defer lk.Close()
	final := s.imageDir(im.ID)
	if _, err := os.Stat(final); err == nil {
		if !replace {
			// Built meanwhile by another process: same inputs, same image.
			return s.nameAndLoad(im, name)
		}
		use, free, err := claimUnused(filepath.Join(final, "use"))
		if err != nil {
			return err
		}
		if !free {
			return fmt.Errorf("image %s (%s) is in use by running desktops (a daemon's spares, which `drums session ls` does not show, count: they go when it stops): remove them, or build under another name: %w", im.ShortID(), name, ErrBusy)
		}
		defer use.Close()
		old := b.dir + ".old"
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("move the old image aside: %w", err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(b.dir, final); err != nil {
		return fmt.Errorf("install image %s: %w", im.ShortID(), err)
	}
	return s.nameAndLoad(im, name)
}

func (s *Store) nameAndLoad(im *Image, name string) error {
	if err := s.setName(name, im.ID); err != nil {
		return err
	}
	got, err := s.load(im.ID)
	if err != nil {
		return err
	}
	*im = *got
	return nil
}

// countPackages counts the packages dpkg has installed in a root
// filesystem (0 for an image without dpkg).
func countPackages(rootfs string) int {
	b, _ := tree{base: rootfs}.readFile("var/lib/dpkg/status")
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l == "Status: install ok installed" {
			n++
		}
	}
	return n
}

// writeJSON replaces path with v as indented JSON.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// diskUsage is what a tree takes on disk, hard links counted once.
func diskUsage(root string) (int64, error) {
	seen := map[uint64]bool{}
	var total int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure %s: %w", root, err)
	}
	return total, nil
}

func HumanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
