package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/drums-dev/drums/compat"
)

// printDensityStop prints where a ramp stopped.
func printDensityStop(w io.Writer, workload, how string, s RampStop) {
	fmt.Fprintf(w, "density %-9s %d desktops fit%s: %s\n", workload, s.Fit, how, s.Reason)
}

func printRampStep(w io.Writer, workload string, s RampStep) {
	ksm := ""
	if s.KSM {
		ksm = " (ksm)"
	}
	fmt.Fprintf(w, "density %-9s %3d desktops%s: screenshot p50 %s p95 %s max %s; MemAvailable %.0f MiB, %.0f MiB less per desktop; PSS %.0f MiB per desktop (RSS %.0f)\n",
		workload, s.Desktops, ksm, compat.Millis(s.Screenshot.Median), compat.Millis(s.Screenshot.P95), compat.Millis(s.Screenshot.Max),
		mib(s.MemAvailable), mib(s.HostPerDesktop), mib(s.Memory.PerDesktop.Pss), mib(s.Memory.PerDesktop.Rss))
}

// printKSM prints what merging did.
func printKSM(w io.Writer, r *DensityResult) {
	k := r.KSM
	fmt.Fprintf(w, "ksm     %-9s %d desktops: %s saved (pages_sharing), MemAvailable %+.0f MiB, PSS %.0f → %.0f MiB per desktop; ksmd %.1f s CPU over %.0f s (%.0f%% of a CPU), screenshot p50 %s max %s\n",
		r.Workload, k.Desktops, size(k.After.PagesSharing*pageKiB*1024), mib(k.AvailAfter-k.AvailBefore), mib(r.lastMemory(false).Pss), mib(k.Memory.PerDesktop.Pss),
		k.KsmdCPU.Seconds(), k.Seconds, 100*k.KsmdCPU.Seconds()/max(k.Seconds, 1e-9), compat.Millis(k.Screenshot.Median), compat.Millis(k.Screenshot.Max))
}

// lastMemory is the memory per desktop at the ramp's last step with or
// without merging.
func (r *DensityResult) lastMemory(ksm bool) ProcMem {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		if r.Steps[i].KSM == ksm {
			return r.Steps[i].Memory.PerDesktop
		}
	}
	return ProcMem{}
}

// lastStep is the ramp's last step without merging.
func (r *DensityResult) lastStep() *RampStep {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		if !r.Steps[i].KSM {
			return &r.Steps[i]
		}
	}
	return nil
}

func densityMarkdown(b *strings.Builder, rs []DensityResult) {
	b.WriteString("\n## Density: desktops with applications that fit\n\n")
	b.WriteString("Each ramp adds desktops (1920x1080, guestd alone), a step at a time, each readied with its workload before the next starts; after each step it waits the settle time, times one `GET /screenshot` of every desktop one after the other (a new connection each), reads the host's MemAvailable and each desktop's memory (`/proc/PID/smaps_rollup` of every process in its cgroups). It stops at the first desktop that fails or answers later than the limit, when the next desktops would take MemAvailable below the floor (the host must not reach its OOM killer), or at its maximum. Fit: the desktops up at the last step where all of them answered in time. Host per desktop is the fall of MemAvailable since the ramp began over the desktops up; MemAvailable counts the page cache as available, so the file pages a desktop maps (PSS file: its share of the image's libraries and data, read once for all desktops of the image) barely lower it, while anonymous memory, shared memory, page tables and the kernel's own do; it also moves with whatever else the host runs.\n")
	for i := range rs {
		r := &rs[i]
		fmt.Fprintf(b, "\n### %s\n\n", r.Workload)
		fmt.Fprintf(b, "- %s\n", stampLine(r.Stamp))
		fmt.Fprintf(b, "- each desktop: %s, image `%s`; up to %d desktops, %d a step, settle %s, limit %s, floor %.0f MiB; MemAvailable before: %.0f MiB\n",
			r.Doc, r.Image, r.Max, r.Step, r.Settle, r.Limit, mib(r.Floor), mib(r.Baseline))
		fmt.Fprintf(b, "- **%d desktops fit**: %s\n", r.Stop.Fit, r.Stop.Reason)
		if s := r.KSMStop; s != nil {
			fmt.Fprintf(b, "- **with same-page merging, %d fit**: %s\n", s.Fit, s.Reason)
		}
		if l := r.lastStep(); l != nil && l.HostPerDesktop > 0 && r.Stop.Kind == StopMemory {
			fmt.Fprintf(b, "- at %.0f MiB of MemAvailable per desktop, the %.0f MiB left above no floor would hold about %d more\n",
				mib(l.HostPerDesktop), mib(l.MemAvailable), l.MemAvailable/l.HostPerDesktop)
		}
		b.WriteString("\n| desktops | KSM | screenshot p50 | p95 | max | MemAvailable | host per desktop | PSS per desktop | anon | file | shmem | RSS per desktop |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.Steps {
			m := s.Memory.PerDesktop
			ksm := ""
			if s.KSM {
				ksm = "on"
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %.0f MiB | %.0f MiB | **%.0f MiB** | %.0f | %.0f | %.0f | %.0f MiB |\n", s.Desktops, ksm,
				compat.Millis(s.Screenshot.Median), compat.Millis(s.Screenshot.P95), compat.Millis(s.Screenshot.Max), mib(s.MemAvailable),
				mib(s.HostPerDesktop), mib(m.Pss), mib(m.PssAnon), mib(m.PssFile), mib(m.PssShmem), mib(m.Rss))
		}
		if l := r.lastStep(); l != nil && len(l.Memory.ByProcess) > 0 {
			fmt.Fprintf(b, "\nWhat shares and what does not, with %d desktops up (mean per desktop; RSS counts a page in every process that maps it, PSS divides it among them: RSS − PSS is what other processes, of this desktop or others, share with it):\n\n", l.Desktops)
			b.WriteString("| process | processes | RSS | PSS | PSS anon | PSS file | PSS shmem | shared (RSS − PSS) |\n|---|---|---|---|---|---|---|---|\n")
			for _, p := range l.Memory.ByProcess {
				m := p.Mem
				fmt.Fprintf(b, "| %s | %d | %.1f MiB | **%.1f MiB** | %.1f | %.1f | %.1f | %.1f MiB |\n", p.Name, m.Procs, mib(m.Rss), mib(m.Pss),
					mib(m.PssAnon), mib(m.PssFile), mib(m.PssShmem), mib(m.Rss-m.Pss))
			}
		}
		if k := r.KSM; k != nil {
			before := r.lastMemory(false)
			fmt.Fprintf(b, "\nSame-page merging over the %d desktops up (`PR_SET_MEMORY_MERGE` on every process, ksmd at %d pages every %s; settled: %v after %.0f s, %d full scans):\n\n",
				k.Desktops, k.PagesToScan, k.Sleep, k.Settled, k.Seconds, k.After.FullScans-k.Before.FullScans)
			fmt.Fprintf(b, "- saved: **%s** (pages_sharing %d, on pages_shared %d; general_profit %s), %.1f MiB per desktop\n",
				size(k.After.PagesSharing*pageKiB*1024), k.After.PagesSharing, k.After.PagesShared, size(k.After.GeneralProfit), mib(k.After.PagesSharing*pageKiB)/float64(k.Desktops))
			fmt.Fprintf(b, "- MemAvailable %.0f → %.0f MiB (%+.0f MiB); PSS per desktop %.0f → %.0f MiB (anon %.0f → %.0f)\n",
				mib(k.AvailBefore), mib(k.AvailAfter), mib(k.AvailAfter-k.AvailBefore), mib(before.Pss), mib(k.Memory.PerDesktop.Pss), mib(before.PssAnon), mib(k.Memory.PerDesktop.PssAnon))
			fmt.Fprintf(b, "- CPU: ksmd used %.1f s until merging settled (%.0f%% of one CPU over %.0f s)", k.KsmdCPU.Seconds(), 100*k.KsmdCPU.Seconds()/max(k.Seconds, 1e-9), k.Seconds)
			if k.AllSeconds > 0 {
				fmt.Fprintf(b, ", %.1f s over all %.0f s it ran (%.0f%%)", k.KsmdCPUAll.Seconds(), k.AllSeconds, 100*k.KsmdCPUAll.Seconds()/k.AllSeconds)
			}
			fmt.Fprintf(b, "\n- screenshots after merging: p50 %s, max %s\n", compat.Millis(k.Screenshot.Median), compat.Millis(k.Screenshot.Max))
			if k.ProbeError != "" {
				fmt.Fprintf(b, "- a desktop failed after merging: %s\n", k.ProbeError)
			}
			if len(k.Scans) > 0 {
				b.WriteString("\n| full scan | after | pages sharing | saved | ksmd CPU | MemAvailable |\n|---|---|---|---|---|---|\n")
				for _, s := range k.Scans {
					fmt.Fprintf(b, "| %d | %.0f s | %d | %s | %.1f s | %.0f MiB |\n", s.FullScans, s.Seconds, s.PagesSharing, size(s.PagesSharing*pageKiB*1024), s.KsmdCPU.Seconds(), mib(s.MemAvailable))
				}
			}
		}
	}
}

// densityPanels are the density part's figures: how many fit, and the
// memory per desktop where each ramp stopped.
func (r *Report) densityPanels() []panel {
	if len(r.Density) == 0 {
		return nil
	}
	what := "Desktops added a step at a time until one answers GET /screenshot late, fails, or MemAvailable would cross the floor"
	st := r.Density[0].Stamp
	st.LoadAfter, st.Seconds = r.Density[len(r.Density)-1].LoadAfter, 0
	fit := panel{title: "Density: desktops that fit, every one answering GET /screenshot in time", unit: "desktops", caption: r.caption(st, what)}
	mem := panel{title: "Memory per desktop where each ramp stopped (PSS)", unit: "MiB", caption: r.caption(st, what+"; PSS summed over each desktop's processes, and the host's MemAvailable drop per desktop")}
	for _, d := range r.Density {
		fit.bars = append(fit.bars, bar{group: d.Workload, label: "no merging", segs: []seg{{"no merging", float64(d.Stop.Fit)}},
			text: fmt.Sprintf("%d (%s)", d.Stop.Fit, d.Stop.Kind)})
		if s := d.KSMStop; s != nil {
			fit.bars = append(fit.bars, bar{group: d.Workload, label: "same-page merging", segs: []seg{{"same-page merging", float64(s.Fit)}},
				text: fmt.Sprintf("%d (%s)", s.Fit, s.Kind)})
		}
		if l := d.lastStep(); l != nil {
			m := l.Memory.PerDesktop
			mem.bars = append(mem.bars, bar{group: d.Workload, label: plural(l.Desktops, "desktop"),
				segs: []seg{{"anon", mib(m.PssAnon)}, {"file", mib(m.PssFile)}, {"shmem", mib(m.PssShmem)}},
				text: fmt.Sprintf("%s MiB PSS, %s MiB host", num(mib(m.Pss)), num(mib(l.HostPerDesktop)))})
		}
		if k := d.KSM; k != nil {
			m := k.Memory.PerDesktop
			mem.bars = append(mem.bars, bar{group: d.Workload, label: plural(k.Desktops, "desktop") + ", merged",
				segs: []seg{{"anon", mib(m.PssAnon)}, {"file", mib(m.PssFile)}, {"shmem", mib(m.PssShmem)}},
				text: fmt.Sprintf("%s MiB PSS, %s saved", num(mib(m.Pss)), size(k.After.PagesSharing*pageKiB*1024))})
		}
	}
	return []panel{fit, mem}
}
