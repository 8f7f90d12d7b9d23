package provider

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// latencyBuckets (seconds) span a warm lease (~1 ms) to a cold start on a
// loaded machine (tens of seconds).
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// metrics are the daemon's Prometheus series, in a registry of the
// daemon's own (never client_golang's global one, so two daemons in one
// test process do not share series), with the Go runtime's and the
// process's collectors beside drums'. The names, types, labels and help
// texts are those of the hand-written exposition text this replaced
// (testdata/metrics.golden).
type metrics struct {
	lease, revert, create, reset histogram
	expired                      prometheus.Counter
	failures                     *prometheus.CounterVec
	// handler serves the registry in the format the scraper asks for
	// (the text format 0.0.4 by default); reg is read for the page's charts.
	handler http.Handler
	reg     *prometheus.Registry
}

// newMetrics registers the series; states is read at each scrape for the
// desktops by state, capacity is the configured maximum.
func newMetrics(states func() map[string]int, capacity int, log *slog.Logger) *metrics {
	m := &metrics{
		lease:  newHistogram("drums_lease_seconds", "Time to hand out a leased desktop, by source (warm pool or cold start).", "source"),
		revert: newHistogram("drums_revert_seconds", "Time to revert a desktop, by mode (swap in a warm one, reset in place, start a new one).", "mode"),
		create: newHistogram("drums_create_seconds", "Time the engine takes to start a desktop until its guestd answers.", ""),
		reset:  newHistogram("drums_reset_seconds", "Time the engine takes to reset a desktop in place.", ""),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drums_leases_expired_total", Help: "Leases that ended because they were not renewed."}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drums_failures_total", Help: "Failed operations, by operation."}, []string{"op"}),
	}
	capGauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "drums_capacity", Help: "Most desktops at once."})
	capGauge.Set(float64(capacity))
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		desktopsCollector{states: states, desc: prometheus.NewDesc("drums_desktops", "Desktops the daemon holds, by state.", []string{"state"}, nil)},
		capGauge, m.expired, m.failures,
		m.lease.vec, m.revert.vec, m.create.vec, m.reset.vec,
	)
	m.reg = reg
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
	})
	return m
}

func (m *metrics) failure(op string) { m.failures.WithLabelValues(op).Inc() }

// desktopsCollector reports the desktops by state as they are when
// scraped, so the manager keeps no second count to get out of step.
type desktopsCollector struct {
	states func() map[string]int
	desc   *prometheus.Desc
}

func (c desktopsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c desktopsCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.states() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), state)
	}
}

// histogram is a latency histogram with at most one label. Even an
// unlabelled one is a vector: a series appears with its first
// observation, as in the hand-written text this replaced.
type histogram struct {
	vec      *prometheus.HistogramVec
	labelled bool
}

func newHistogram(name, help, label string) histogram {
	var labels []string
	if label != "" {
		labels = []string{label}
	}
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets}, labels)
	return histogram{vec: vec, labelled: label != ""}
}

// observe records d under labelValue ("" for an unlabelled histogram).
func (h histogram) observe(labelValue string, d time.Duration) {
	var lv []string
	if h.labelled {
		lv = []string{labelValue}
	}
	h.vec.WithLabelValues(lv...).Observe(d.Seconds())
}
