//go:build linux

package drumscli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
)

const imageUsage = `Usage: drums image COMMAND [flags]

A desktop's root filesystem is an image, never the host's /. Images live in
a store (--image-dir, default ` + images.DefaultDir + `), are named, and
are shared read-only by every desktop started from them.

Commands:
  build NAME      build an image from Debian packages with mmdebstrap
  import NAME FILE
                  import a root filesystem tarball (.tar, .tar.gz, .tar.zst),
                  an OCI image layout directory or archive, a docker save
                  archive, or a raw or qcow2 disk image
  ls              list the images
  inspect NAME    show an image's manifest
  check NAME      say what an image lacks to run a desktop, and how to add it
  rm NAME         remove a name (the image too once it has none)
  run NAME -- CMD run a trusted command as root over the image (tests of
                  what runs inside a desktop use it; not a desktop)

Run 'drums image COMMAND --help' for a command's flags.
`

// imageConfig is the configuration of an image command: the store, the
// arguments it takes and --json where it has it.
type imageConfig struct {
	Dir  string
	Args []string
	JSON bool
}

// parseImageFlags parses a subcommand's flags, --image-dir among them, into
// cfg. The positional arguments must number want.
func parseImageFlags(fs *flag.FlagSet, cfg *imageConfig, args []string, usage string, want int) error {
	fs.StringVar(&cfg.Dir, "image-dir", images.DefaultDir, "the image store")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != want {
		fs.Usage()
		return fmt.Errorf("want %d argument(s), got %d", want, fs.NArg())
	}
	cfg.Args = fs.Args()
	return nil
}

// parseInterspersed parses flags that may come after positional arguments
// (drums image build core --rebuild).
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// imageBuildConfig is the configuration of `drums image build`.
type imageBuildConfig struct {
	imageConfig
	Build        images.BuildOptions // but Progress
	PackagesFile string
}

func parseImageBuild(args []string, stderr io.Writer) (imageBuildConfig, error) {
	var cfg imageBuildConfig
	o := &cfg.Build
	fs := newFlags("drums image build", stderr)
	fs.StringVar(&o.Recipe, "recipe", "", "built-in recipe: "+strings.Join(images.RecipeNames(), ", ")+" (default NAME if it is one, else core)")
	fs.StringVar(&o.Suite, "suite", images.DefaultSuite, "Debian or Ubuntu suite (jammy is OSWorld's guest)")
	var mirrors, packages stringList
	fs.Var(&mirrors, "mirror", "apt archive URL, or a whole \"deb URL SUITE COMPONENTS\" line (repeatable; default the distribution's, with its -updates and -security)")
	fs.StringVar(&o.Arch, "arch", "", "architecture, in dpkg's names (default the host's)")
	fs.Var(&packages, "packages", "more packages, comma-separated (repeatable)")
	fs.StringVar(&cfg.PackagesFile, "packages-file", "", "more packages, one per line (# comments)")
	fs.BoolVar(&o.Rebuild, "rebuild", false, "build even if an image of the same inputs exists (refused while desktops run from it)")
	fs.BoolVar(&cfg.JSON, "json", false, "print the image's manifest as JSON when done")
	err := parseImageFlags(fs, &cfg.imageConfig, args, `Usage: drums image build NAME [flags]

Builds a root filesystem with mmdebstrap from Debian's archive (or Ubuntu's,
with --suite jammy and an Ubuntu --mirror): the recipe's packages, then the
configuration of an OSWorld guest (user "user", uid 1000, password
"password", sudo; en_US.UTF-8; google-chrome served by Chromium; VLC's HTTP
interface; LibreOffice's profile; PulseAudio's null sink; the accessibility
settings). The same recipe, suite, mirrors, architecture and packages give
the same image id: an existing image is reused at once unless --rebuild.
Progress goes to stderr; a failed build installs nothing.

Recipes:
  core      the desktop stack, python3, sudo, gnome-terminal and xterm, and
            what the stack's tests drive (GTK demo apps, zenity)
  osworld   core plus Chromium, LibreOffice, GIMP, VLC, Thunderbird, nautilus

Flags:
`, 1)
	if err != nil {
		return cfg, err
	}
	o.Name, o.Mirrors, o.Packages = cfg.Args[0], mirrors, packages.split()
	return cfg, nil
}

func runImageBuild(ctx context.Context, cfg imageBuildConfig, s stdio) error {
	st, err := images.Open(cfg.Dir)
	if err != nil {
		return err
	}
	o := cfg.Build
	o.Progress = func(line string) { fmt.Fprintln(s.err, line) }
	if cfg.PackagesFile != "" {
		extra, err := readPackagesFile(cfg.PackagesFile)
		if err != nil {
			return err
		}
		o.Packages = append(o.Packages, extra...)
	}
	im, err := st.Build(ctx, o)
	if err != nil {
		return err
	}
	return showImage(s.out, im, cfg.JSON)
}

// imageImportConfig is the configuration of `drums image import`.
type imageImportConfig struct {
	imageConfig
	Format string
}

func parseImageImport(args []string, stderr io.Writer) (imageImportConfig, error) {
	var cfg imageImportConfig
	fs := newFlags("drums image import", stderr)
	fs.StringVar(&cfg.Format, "format", "", "tar, oci, docker, disk (default: found from the file)")
	fs.BoolVar(&cfg.JSON, "json", false, "print the image's manifest as JSON when done")
	err := parseImageFlags(fs, &cfg.imageConfig, args, `Usage: drums image import NAME FILE [flags]

Imports what you have as an image: a root filesystem tarball (.tar, .tar.gz,
.tgz, .tar.zst), an OCI image layout (a directory, or a tar of one), a
"docker save" archive (layers applied in order, whiteouts honoured), or a raw
or qcow2 disk image such as OSWorld's Ubuntu.qcow2 (its Linux root
partition, found in the GPT or MBR table; qcow2 needs qemu-img). The same
bytes give the same image id. The image is then checked for what a desktop
needs, and what is missing is listed with how to add it.

Flags:
`, 2)
	return cfg, err
}

func runImageImport(ctx context.Context, cfg imageImportConfig, s stdio) error {
	st, err := images.Open(cfg.Dir)
	if err != nil {
		return err
	}
	im, err := st.Import(ctx, images.ImportOptions{Name: cfg.Args[0], File: cfg.Args[1], Format: cfg.Format,
		Progress: func(line string) { fmt.Fprintln(s.err, line) }})
	if err != nil {
		return err
	}
	if err := showImage(s.out, im, cfg.JSON); err != nil || cfg.JSON {
		return err
	}
	return reportProblems(s.out, im)
}

func parseImageList(args []string, stderr io.Writer) (imageConfig, error) {
	var cfg imageConfig
	fs := newFlags("drums image ls", stderr)
	fs.BoolVar(&cfg.JSON, "json", false, "print JSON")
	err := parseImageFlags(fs, &cfg, args, "Usage: drums image ls [flags]\n\nLists the images of the store.\n\nFlags:\n", 0)
	return cfg, err
}

func runImageList(_ context.Context, cfg imageConfig, s stdio) error {
	st, err := images.Open(cfg.Dir)
	if err != nil {
		return err
	}
	list, err := st.List()
	if err != nil {
		return err
	}
	if cfg.JSON {
		if list == nil {
			list = []*images.Image{}
		}
		return printJSON(s.out, list)
	}
	w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAMES\tID\tSOURCE\tOS\tSIZE\tPACKAGES\tCREATED\tDESKTOP")
	for _, im := range list {
		desktop := "ok"
		if n := len(im.Desktop.Problems()); n > 0 {
			desktop = fmt.Sprintf("%d problems (drums image check)", n)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", strings.Join(im.Names, ","), im.ShortID(), sourceString(im.Source),
			im.OS, images.HumanSize(im.Size), im.Packages, im.Created.Local().Format(time.DateTime), desktop)
	}
	return w.Flush()
}

func parseImageInspect(args []string, stderr io.Writer) (imageConfig, error) {
	var cfg imageConfig
	fs := newFlags("drums image inspect", stderr)
	fs.BoolVar(&cfg.JSON, "json", false, "print JSON")
	err := parseImageFlags(fs, &cfg, args, "Usage: drums image inspect NAME [flags]\n\nShows an image's manifest: id, source, size, packages, and which parts of a desktop it has.\n\nFlags:\n", 1)
	return cfg, err
}

func runImageInspect(_ context.Context, cfg imageConfig, s stdio) error {
	im, err := getImage(cfg)
	if err != nil {
		return err
	}
	return showImage(s.out, im, cfg.JSON)
}

// getImage is the image cfg names.
func getImage(cfg imageConfig) (*images.Image, error) {
	st, err := images.Open(cfg.Dir)
	if err != nil {
		return nil, err
	}
	return st.Get(cfg.Args[0])
}

func parseImageCheck(args []string, stderr io.Writer) (imageConfig, error) {
	var cfg imageConfig
	fs := newFlags("drums image check", stderr)
	err := parseImageFlags(fs, &cfg, args, "Usage: drums image check NAME [flags]\n\nLooks into the image again for what a desktop needs (an X server, a window\nmanager, D-Bus, AT-SPI, python3, the user) and says how to add what is\nmissing. It exits non-zero when a desktop cannot start from it.\n\nFlags:\n", 1)
	return cfg, err
}

func runImageCheck(_ context.Context, cfg imageConfig, s stdio) error {
	im, err := getImage(cfg)
	if err != nil {
		return err
	}
	im.Desktop = images.Inspect(im.RootFS())
	printParts(s.out, im.Desktop)
	return reportProblems(s.out, im)
}

func parseImageRemove(args []string, stderr io.Writer) (imageConfig, error) {
	var cfg imageConfig
	fs := newFlags("drums image rm", stderr)
	err := parseImageFlags(fs, &cfg, args, "Usage: drums image rm NAME|ID [flags]\n\nRemoves a name; the image goes with its last name (an id removes it and\nevery name). Refused while desktops run from it.\n\nFlags:\n", 1)
	return cfg, err
}

func runImageRemove(_ context.Context, cfg imageConfig, _ stdio) error {
	st, err := images.Open(cfg.Dir)
	if err != nil {
		return err
	}
	return st.Remove(cfg.Args[0])
}

// imageRunConfig is the configuration of `drums image run`.
type imageRunConfig struct {
	imageConfig
	Binds []string // the current directory and the command's are added
	Argv  []string
}

func parseImageRun(args []string, stderr io.Writer) (imageRunConfig, error) {
	var cfg imageRunConfig
	fs := newFlags("drums image run", stderr)
	var binds stringList
	fs.Var(&binds, "bind", "a host directory seen read-write at the same path (repeatable; the current directory and the command's own directory are always bound)")
	dash := slices.Index(args, "--")
	if dash < 0 {
		dash = len(args)
	}
	err := parseImageFlags(fs, &cfg.imageConfig, args[:dash], `Usage: drums image run [flags] NAME -- CMD [ARG...]

Runs CMD as root over the image's root filesystem, in private mount, PID,
network (loopback only), IPC and UTS namespaces, with the current directory
bound read-write, and exits with CMD's status. The tier-1 tests of what runs
inside a desktop use it (go test -exec 'drums image run core --'), so they
test against the image's X server, toolkits and Python, not the host's.
It is NOT a desktop: CMD runs as the host's root, without a user namespace
or seccomp; run only what you trust. Agents get desktops (drums session,
drums serve).

Flags:
`, 1)
	if err != nil {
		return cfg, err
	}
	cfg.Binds, cfg.Argv = binds, args[min(dash+1, len(args)):]
	if len(cfg.Argv) == 0 {
		return cfg, errors.New("image run: no command after --")
	}
	return cfg, nil
}

func runImageRun(_ context.Context, cfg imageRunConfig, _ stdio) error {
	im, err := getImage(cfg.imageConfig)
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	binds := append(slices.Clone(cfg.Binds), cwd)
	if filepath.IsAbs(cfg.Argv[0]) {
		binds = append(binds, filepath.Dir(cfg.Argv[0]))
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := slices.DeleteFunc(os.Environ(), func(e string) bool {
		k, _, _ := strings.Cut(e, "=")
		return k == "PATH" || k == "HOME" || k == "TMPDIR"
	})
	env = append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TMPDIR=/tmp")
	code, err := sessions.RunInImage(sessions.RunOptions{Image: im, Binds: binds, Argv: cfg.Argv, Env: env, Dir: cwd, Binary: exe})
	if err != nil {
		return err
	}
	if code != 0 {
		return exitError(code)
	}
	return nil
}

func reportProblems(w io.Writer, im *images.Image) error {
	problems := im.Desktop.Problems()
	if len(problems) == 0 {
		fmt.Fprintln(w, "desktop: everything a desktop needs is there")
		return nil
	}
	fmt.Fprintln(w, "desktop: a desktop cannot start from this image:")
	for _, p := range problems {
		fmt.Fprintln(w, "  - "+p)
	}
	fmt.Fprintln(w, "  "+im.Desktop.Fix())
	return fmt.Errorf("image %s lacks what a desktop needs", im.ShortID())
}

// showImage prints an image's manifest, as JSON or for people.
func showImage(w io.Writer, im *images.Image, asJSON bool) error {
	if asJSON {
		return printJSON(w, im)
	}
	printImage(w, im)
	return nil
}

func printImage(w io.Writer, im *images.Image) {
	fmt.Fprintf(w, "image %s\n", strings.Join(im.Names, ", "))
	fmt.Fprintf(w, "  id        %s\n", im.ID)
	fmt.Fprintf(w, "  source    %s\n", sourceString(im.Source))
	fmt.Fprintf(w, "  os        %s\n", im.OS)
	fmt.Fprintf(w, "  size      %s, %d packages\n", images.HumanSize(im.Size), im.Packages)
	fmt.Fprintf(w, "  created   %s\n", im.Created.Local().Format(time.RFC3339))
	if u := im.Desktop.User; u != nil {
		fmt.Fprintf(w, "  user      %s (uid %d, groups %v, home %s), locale %s\n", u.Name, u.UID, u.Groups, u.Home, im.Desktop.Locale)
	}
	printParts(w, im.Desktop)
}

func printParts(w io.Writer, d images.Desktop) {
	var have, lack []string
	for _, p := range d.Parts {
		if p.Path != "" {
			have = append(have, p.Name)
		} else {
			lack = append(lack, p.Name)
		}
	}
	fmt.Fprintf(w, "  has       %s\n", strings.Join(have, " "))
	if len(lack) > 0 {
		fmt.Fprintf(w, "  lacks     %s\n", strings.Join(lack, " "))
	}
}

func sourceString(s images.Source) string {
	if s.Kind == "build" {
		return fmt.Sprintf("recipe %s, %s/%s, %d packages", s.Recipe, s.Suite, s.Arch, len(s.Packages))
	}
	return fmt.Sprintf("%s %s", s.Format, s.File)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// split splits comma-separated entries.
func (l stringList) split() []string {
	var out []string
	for _, v := range l {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func readPackagesFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read packages file: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		out = append(out, strings.Fields(l)...)
	}
	return out, nil
}

// ensureImage makes sure the image a run needs is in the store: an image
// named after a built-in recipe is built from it (or reused, in well under
// a second), its progress going to stderr; any other must exist already.
func ensureImage(ctx context.Context, dir, name string, stderr io.Writer) error {
	st, err := images.Open(dir)
	if err != nil {
		return err
	}
	if _, ok := images.Recipes[name]; !ok {
		_, err := st.Get(name)
		return err
	}
	_, err = st.Build(ctx, images.BuildOptions{Name: name, Progress: func(line string) { fmt.Fprintln(stderr, line) }})
	return err
}
