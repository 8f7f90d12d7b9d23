package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/drums-dev/drums/internal/ready"
)

// Xvfb compiles its keymap at every start: it runs xkbcomp through a shell
// with the keymap's description on stdin, about a third of its start's CPU
// (perf over 20 Xvfb starts in a desktop: xkbcomp and its shell 35% of
// Xvfb's samples). The image keeps the one compile every desktop's Xvfb asks
// for: XkbcompPath is drums' xkbcomp (xkbcompSource), the package's
// binary moves to XkbcompReal (a dpkg diversion), and the build runs the
// image's Xvfb once so that drums' xkbcomp records the real one's
// arguments, input and output in XkbcompCache.
const (
	XkbcompPath  = "/usr/bin/xkbcomp"
	XkbcompReal  = "/usr/bin/xkbcomp.real"
	XkbcompCache = "/usr/lib/drums/xkbcomp"
)

// xkbcompRecordTimeout bounds the build's Xvfb start.
const xkbcompRecordTimeout = 2 * time.Minute

// xkbcomp installs drums' xkbcomp in the image and records Xvfb's compile.
// An image of another architecture than the host's goes without (the C
// compiler builds for the host), and its Xvfb runs the package's xkbcomp.
func (t tree) xkbcomp() error {
	if native, err := t.hostArch("usr/bin/Xvfb"); err != nil || !native {
		return err
	}
	built := filepath.Join(t.root, XkbcompPath+".drums")
	// Static: it must run in the image whatever the host's C library.
	if err := buildC(xkbcompSource, built, "-static"); err != nil {
		return err
	}
	if err := inRoot(t.root, "dpkg-divert", "--local", "--rename", "--divert", XkbcompReal, "--add", XkbcompPath); err != nil {
		return err
	}
	if err := os.Rename(built, filepath.Join(t.root, XkbcompPath)); err != nil {
		return fmt.Errorf("install drums' xkbcomp: %w", err)
	}
	if err := t.mkdirs(XkbcompCache); err != nil {
		return err
	}
	if err := recordXkbcomp(t.root); err != nil {
		return err
	}
	for _, name := range []string{"args", "input", "output"} {
		if _, err := os.Stat(filepath.Join(t.root, XkbcompCache, name)); err != nil {
			return fmt.Errorf("Xvfb's keymap compile was not recorded: %w", err)
		}
	}
	return nil
}

// recordXkbcomp runs the image's Xvfb chrooted into root until it is
// ready, with DRUMS_XKBCOMP_RECORD set for drums' xkbcomp. It listens on
// no socket outside root (no TCP, no abstract socket), and what it leaves
// in /tmp goes.
func recordXkbcomp(root string) (err error) {
	sockets := filepath.Join(root, "tmp/.X11-unix")
	if err := os.Mkdir(sockets, 0o1777); err != nil {
		return fmt.Errorf("socket directory for the build's Xvfb: %w", err)
	}
	// What it leaves would be in the image.
	defer func() { err = errors.Join(err, cleanTmp(root)) }()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	// The screen desktops get; the keymap does not depend on it.
	cmd, err := rootCmd(root, []string{"DRUMS_XKBCOMP_RECORD=1"}, "Xvfb", "-displayfd", "3", "-nolisten", "tcp", "-nolisten", "local",
		"-noreset", "-screen", "0", "1920x1080x24", "-extension", "GLX")
	if err != nil {
		w.Close()
		return err
	}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = &log, &log, []*os.File{w}
	cmd.SysProcAttr.Setsid = true
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start Xvfb in the image: %w", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	ctx, cancel := context.WithTimeout(context.Background(), xkbcompRecordTimeout)
	defer cancel()
	_, err = ready.Line(ctx, r, exited)
	cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	if err != nil {
		return fmt.Errorf("Xvfb in the image: %w (%v): %s", err, waitErr, bytes.TrimSpace(log.Bytes()))
	}
	return nil
}

// cleanTmp removes what Xvfb and xkbcomp leave in root's /tmp: its socket
// directory, lock file and compiled keymap.
func cleanTmp(root string) error {
	var errs []error
	for _, pat := range []string{"tmp/.X11-unix", "tmp/.X*-lock", "tmp/server-*.xkm"} {
		matches, _ := filepath.Glob(filepath.Join(root, pat))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// xkbcompSource is drums' xkbcomp. Called as Xvfb calls it, with the
// arguments (all but the output file) and the input recorded in
// XkbcompCache, it writes the recorded output; called otherwise, it runs
// the real xkbcomp with its own arguments and input, untouched. With
// DRUMS_XKBCOMP_RECORD set it runs the real one and records its call.
const xkbcompSource = `/* drums: xkbcomp with the image's compile of Xvfb's keymap. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define REAL "` + XkbcompReal + `"
#define CACHE "` + XkbcompCache + `/"
#define MAXIN (1 << 20)

static char in[MAXIN + 1], args[MAXIN];

/* real runs the real xkbcomp in this process. */
static void real(char **argv) {
	execv(REAL, argv);
	perror(REAL);
	_exit(127);
}

/* readfd reads fd to its end or max bytes; -1 on an error. */
static ssize_t readfd(int fd, char *buf, size_t max) {
	size_t n = 0;
	while (n < max) {
		ssize_t r = read(fd, buf + n, max - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += r;
	}
	return n;
}

static int writefd(int fd, const char *buf, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		n -= w;
	}
	return 0;
}

/* same says whether the file at path holds exactly buf. */
static int same(const char *path, const char *buf, size_t n) {
	static char file[MAXIN + 1];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got = readfd(fd, file, sizeof file);
	close(fd);
	return got == (ssize_t)n && memcmp(file, buf, n) == 0;
}

/* copyfile copies the file at src to a new file at dst. */
static int copyfile(const char *src, const char *dst) {
	static char buf[MAXIN + 1];
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = readfd(fd, buf, sizeof buf);
	close(fd);
	if (n < 0 || n > MAXIN)
		return -1;
	unlink(dst);
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (out < 0)
		return -1;
	int err = writefd(out, buf, n);
	return close(out) < 0 ? -1 : err;
}

/* keep writes buf to CACHE/name, whole or not at all. */
static int keep(const char *name, const char *buf, size_t n) {
	char path[256], tmp[256];
	snprintf(path, sizeof path, CACHE "%s", name);
	snprintf(tmp, sizeof tmp, CACHE ".%s.new", name);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || writefd(fd, buf, n) < 0 || close(fd) < 0)
		return -1;
	return rename(tmp, path);
}

int main(int argc, char **argv) {
	int record = getenv("DRUMS_XKBCOMP_RECORD") != NULL;
	/* The arguments but the last (the output file), each ended by NUL. */
	size_t alen = 0;
	for (int i = 1; i < argc - 1; i++) {
		size_t l = strlen(argv[i]) + 1;
		if (alen + l > sizeof args)
			real(argv);
		memcpy(args + alen, argv[i], l);
		alen += l;
	}
	if (argc < 3 || (!record && !same(CACHE "args", args, alen)))
		real(argv);
	ssize_t n = readfd(0, in, sizeof in);
	if (n < 0)
		real(argv);
	if (!record && n <= MAXIN && same(CACHE "input", in, n) && copyfile(CACHE "output", argv[argc - 1]) == 0)
		return 0;
	/* The real xkbcomp reads the same input: what was read, then the rest. */
	int mem = memfd_create("xkbcomp-input", MFD_CLOEXEC);
	if (mem < 0 || writefd(mem, in, n) < 0)
		return 1;
	for (ssize_t r = n; r == (ssize_t)sizeof in;) {
		r = readfd(0, in, sizeof in);
		if (r < 0 || writefd(mem, in, r) < 0)
			return 1;
	}
	if (lseek(mem, 0, SEEK_SET) < 0 || dup2(mem, 0) < 0)
		return 1;
	if (!record)
		real(argv);
	pid_t pid = fork();
	if (pid == 0)
		real(argv);
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return 1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	static char out[MAXIN + 1];
	int fd = open(argv[argc - 1], O_RDONLY | O_CLOEXEC);
	ssize_t on = fd < 0 ? -1 : readfd(fd, out, sizeof out);
	if (fd >= 0)
		close(fd);
	if (n > MAXIN || on < 0 || on > MAXIN)
		return 0; /* too large to keep: compiled, not recorded */
	if (keep("output", out, on) < 0 || keep("input", in, n) < 0 || keep("args", args, alen) < 0) {
		perror("drums xkbcomp: record");
		return 1;
	}
	return 0;
}
`
