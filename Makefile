# drums: see README.md. `make run` is the main job, `make test` the tests.
GO      ?= go
BIN     := bin
export PATH := /usr/local/go/bin:$(PATH)

.PHONY: all deps deps-osworld build images test test-unit test-kubernetes kubernetes-image lint race fuzz soak bench run compat clean

# The steps that need root (namespaces, mounts, nftables, image builds; and
# apt-get in scripts/deps) run through scripts/as-root: as they are for
# root, through sudo for a sudoer, with a clear error for an account that
# has neither. So `make run` and `make test` work as written for both,
# and the builds, lints and tier-0 runs stay the caller's (bin/ and the Go
# caches are not root's). Variables reach root only where a recipe names
# them after `env`, plus PATH, GOFLAGS and DRUMS_* (as-root keeps those).
AS_ROOT := scripts/as-root

# staticcheck is run at a pinned version with `go run`, outside this module,
# so its dependencies never enter go.mod (and never upgrade the binaries').
# v0.8 is the series that targets Go 1.26 (its go.mod says go 1.26.0);
# move it with the toolchain.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

all: build

# DRUMS_TIER2=1 (CI's .ci/run sets it) adds the tier-2 test: a real
# Kubernetes cluster on this host (internal/kubetest). Its Debian packages
# come with deps, its own binaries are built once into a cache outside the
# repository ($$DRUMS_CACHE, /var/cache/drums/kubernetes/VERSION) before
# the tests start, so the build does not race the other packages' tests.
TIER2 := $(filter 1,$(DRUMS_TIER2))
# The Kubernetes release the tier-2 tests run: internal/kubetest.Version.
KUBERNETES_VERSION := $(shell sed -n 's/^const Version = "\(v[0-9.]*\)"$$/\1/p' internal/kubetest/cluster_linux.go)

deps:                 ## what drums needs on the host (Debian packages): mmdebstrap, nftables, iproute2, qemu-utils, test tools
	scripts/deps $(if $(TIER2),kubernetes)

deps-osworld: deps    ## also the python3 packages OSWorld's desktop_env imports on the host (--via-python runs)
	scripts/deps osworld

# Without the symbol table and DWARF (-s -w): guestd 13.7 -> 9.5 MB, drums
# 16.4 -> 11.5 MB (bench/results/binaries.md); panics still print their
# stacks (the pc-line table stays).
build:                ## bin/drums, bin/drums-init (what each desktop's init runs) and bin/guestd
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o $(BIN)/ ./cmd/...

# The images desktops and the tests run from. A first build takes a few
# minutes (mmdebstrap from Debian's archive; osworld-gnome, the GNOME
# profile, 4-8 minutes with /var/cache/drums/apt warm and 27 with it empty,
# as its builds of 2026-12-02 took at load 6 and 12-16, a cost CI pays once
# per cache); then each is reused at once.
images: build         ## the core, osworld and osworld-gnome images (drums image build; osworld-gnome 27 min in one cold build under load, 4-8 min with the apt cache warm)
	$(AS_ROOT) $(BIN)/drums image build core
	$(AS_ROOT) $(BIN)/drums image build osworld
	$(AS_ROOT) $(BIN)/drums image build osworld-gnome

test: deps lint race fuzz build images ## the gates, then every test, tier 1 (real Xvfb, D-Bus, namespaces, images) included; tier 2 (Kubernetes) with DRUMS_TIER2=1
	$(if $(TIER2),deploy/kubernetes/build-binaries $(KUBERNETES_VERSION) >/dev/null)
	$(AS_ROOT) env DRUMS_TIER1=1 DRUMS_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 60m ./...

test-kubernetes: build images ## the tier-2 test alone: a two-node Kubernetes cluster on this host, drums deployed on it, an episode through the Service
	scripts/deps kubernetes
	deploy/kubernetes/build-binaries $(KUBERNETES_VERSION) >/dev/null
	$(AS_ROOT) env DRUMS_TIER1=1 DRUMS_TIER2=1 DRUMS_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -v -timeout 30m ./internal/kubetest/ ./deploy/kubernetes/

kubernetes-image: build ## the drums container image, bin/drums-image.oci.tar, for nodes to import (deploy/kubernetes)
	$(GO) run ./deploy/kubernetes/mkimage -bin $(BIN) -o $(BIN)/drums-image.oci.tar

test-unit:            ## tier 0 only: no root, no X
	$(GO) test ./...

run: deps build       ## the main job: image, daemon, desktops, an episode each, the built-in tasks
	$(AS_ROOT) env DRUMS_BIN=$(CURDIR)/$(BIN) $(BIN)/drums run

compat: build         ## guestd against upstream main.py (root; needs DRUMS_UPSTREAM, DRUMS_UPSTREAM_PYTHONPATH)
	$(AS_ROOT) env DRUMS_TIER1=1 DRUMS_BIN=$(CURDIR)/$(BIN) DRUMS_COMPAT_REPORT=$(CURDIR)/compat/report \
	  $(GO) test -count=1 -v -timeout 60m -run '^TestSuite$$' ./compat/

# Benchmarks print numbers; bench/results/*.md keep reviewed results with
# the machine, date and load they were measured under.
BENCH = $(AS_ROOT) env DRUMS_TIER1=1 DRUMS_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -timeout 60m
bench: deps build     ## every benchmark (root, real desktops)
	$(BENCH) -bench . -benchtime 300x ./internal/x11/
	$(BENCH) -bench . -benchtime 100x ./internal/pyauto/
	$(BENCH) -bench BenchmarkDesktop -benchtime 200x ./guestd/
	$(BENCH) -bench . -benchtime 20x ./atspi/
	$(BENCH) -bench . -benchtime 50x ./provider/
	$(BENCH) -bench . -benchtime 1x ./sessions/

lint:                 ## gofmt, go vet on Linux and on darwin, staticcheck (checks: staticcheck.conf)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The race detector needs cgo (gcc, from make deps); only this step enables
# it. Tier 0 only: DRUMS_TIER1 is cleared even when the caller exported it.
race:                 ## tier-0 tests under the race detector
	env -u DRUMS_TIER1 CGO_ENABLED=1 $(GO) test -race -count=1 ./...

# Each fuzz target for FUZZTIME (go test -fuzz takes one target at a time);
# what a run finds is written under the package's testdata/fuzz, where it
# stays as a seed that every plain go test runs.
FUZZTIME ?= 10s
FUZZ := ./guestd:FuzzForm ./internal/pyvalue:FuzzShlex ./internal/pyvalue:FuzzJSONBody ./internal/pyauto:FuzzSnippet \
	./internal/pyvalue:FuzzDecodeReplace ./provider:FuzzAPIRequest
fuzz:                 ## each fuzz target briefly (FUZZTIME, 10s): request parsing of guestd and the daemon
	@set -e; for t in $(FUZZ); do \
		echo "fuzz $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		env -u DRUMS_TIER1 $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%%:*} >/dev/null || \
		{ env -u DRUMS_TIER1 $(GO) test -run "^$${t#*:}$$" $${t%%:*}; exit 1; }; \
	done

# The bounded soak: DRUMS_SOAK_CYCLES (1000) lease/revert/release cycles
# against a daemon killed with SIGKILL at seeded random moments
# (DRUMS_FAULT_SEED repeats a run), then a leak check. Not part of make test.
soak: deps build images ## the soak of the daemon with kills (results: bench/results/soak.md)
	$(AS_ROOT) env DRUMS_TIER1=1 DRUMS_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench BenchmarkSoak -benchtime 1x -timeout 3h ./provider

clean:
	rm -rf $(BIN)
