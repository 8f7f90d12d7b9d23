package provider

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	dto "github.com/prometheus/client_model/go"

	guestclient "github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/provider/client"
)

// The daemon's page, GET /ui/: every desktop with a live thumbnail, its
// state, lease and a link to its live view, and charts of the metrics,
// kept fresh by polling JSON (/v1/desktops, /v1/health, /ui/api/metrics,
// /ui/api/desktops/ID/thumbnail). The
// files are static and embedded; the page builds its DOM with textContent
// and attributes, never markup from data, so nothing here escapes HTML.

//go:embed ui
var uiFiles embed.FS

// uiPage serves the embedded files under /ui/.
func uiPage() echo.HandlerFunc {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return func(c echo.Context) error {
		h := c.Response().Header()
		// The page loads its own script and images only, and no other
		// site may frame it.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}

// Thumbnails. Each viewer of the page asks for every desktop's thumbnail
// every few seconds; the daemon fetches the desktop's /screenshot at most
// once per thumbTTL whatever the number of viewers (the requests in that
// window share the fetch in flight or its result), and at most
// thumbParallel at once, so a page over many desktops cannot make the
// daemon or the desktops spend more than that.
const (
	// thumbTTL must stay below the page's refresh period (3 s) for the
	// thumbnails to look live, and above a screenshot's cost (~20 ms at
	// 1920x1080) many times over.
	thumbTTL      = 2 * time.Second
	thumbParallel = 2
	thumbWidth    = 320
	// thumbFetchTimeout bounds one screenshot; a hung guestd costs a
	// viewer a stale thumbnail, not a request that never ends.
	thumbFetchTimeout = 10 * time.Second
	// thumbForget drops the cache entry of a desktop nobody asked about
	// for that long (a released one).
	thumbForget = time.Minute
)

type thumbnails struct {
	ctx  context.Context // the manager's: a fetch stops when it closes
	http *http.Client
	now  func() time.Time // time.Now; tests move it past thumbTTL
	sem  chan struct{}
	mu   sync.Mutex
	byID map[string]*thumb
}

// thumb is one desktop's latest thumbnail, or the fetch that makes it:
// png and err are set before done is closed.
type thumb struct {
	done  chan struct{}
	at    time.Time // when done was closed
	asked time.Time
	png   []byte
	err   error
}

func newThumbnails(ctx context.Context) *thumbnails {
	// No proxy from the environment: desktops are this host's own
	// addresses, and their screens are nobody else's business.
	return &thumbnails{ctx: ctx, http: &http.Client{Timeout: thumbFetchTimeout, Transport: &http.Transport{}}, now: time.Now, sem: make(chan struct{}, thumbParallel), byID: map[string]*thumb{}}
}

// get returns desktop id's thumbnail, fetched from guestURL when the
// cached one is older than thumbTTL.
func (t *thumbnails) get(ctx context.Context, id, guestURL string) ([]byte, error) {
	now := t.now()
	t.mu.Lock()
	th := t.byID[id]
	if th == nil || th.expired(now) {
		for k, o := range t.byID {
			if now.Sub(o.asked) > thumbForget {
				delete(t.byID, k)
			}
		}
		th = &thumb{done: make(chan struct{})}
		t.byID[id] = th
		go t.fetch(th, guestURL)
	}
	th.asked = now
	t.mu.Unlock()
	select {
	case <-th.done:
		return th.png, th.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// expired reports whether th is a finished fetch older than thumbTTL.
// Called with the thumbnails' mu held.
func (th *thumb) expired(now time.Time) bool {
	select {
	case <-th.done:
		return now.Sub(th.at) > thumbTTL
	default:
		return false
	}
}

func (t *thumbnails) fetch(th *thumb, guestURL string) {
	t.sem <- struct{}{}
	png, err := t.screenshot(guestURL)
	<-t.sem
	t.mu.Lock()
	th.png, th.err, th.at = png, err, t.now()
	t.mu.Unlock()
	close(th.done)
}

func (t *thumbnails) screenshot(guestURL string) ([]byte, error) {
	g := guestclient.New(guestURL, t.http)
	g.Retry = guestclient.Retry{Attempts: 1} // the next viewer's refresh is the retry
	shot, err := g.Screenshot(t.ctx)
	if err != nil {
		return nil, fmt.Errorf("fetch screenshot: %w", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return nil, fmt.Errorf("decode screenshot: %w", err)
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&out, scaleDown(img, thumbWidth)); err != nil {
		return nil, fmt.Errorf("encode thumbnail: %w", err)
	}
	return out.Bytes(), nil
}

// scaleDown shrinks img to width w (keeping its aspect) by averaging the
// source pixels each thumbnail pixel covers; an image no wider than w is
// returned as it is.
func scaleDown(img image.Image, w int) image.Image {
	b := img.Bounds()
	if b.Dx() <= w {
		return img
	}
	h := max(1, b.Dy()*w/b.Dx())
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	src, fast := img.(*image.RGBA) // what guestd's 8-bit RGB PNG decodes to
	for y := range h {
		y0, y1 := b.Min.Y+y*b.Dy()/h, b.Min.Y+(y+1)*b.Dy()/h
		for x := range w {
			x0, x1 := b.Min.X+x*b.Dx()/w, b.Min.X+(x+1)*b.Dx()/w
			var r, g, bl, n uint32
			for sy := y0; sy < y1; sy++ {
				for sx := x0; sx < x1; sx++ {
					if fast {
						p := src.Pix[src.PixOffset(sx, sy):]
						r, g, bl = r+uint32(p[0]), g+uint32(p[1]), bl+uint32(p[2])
					} else {
						pr, pg, pb, _ := img.At(sx, sy).RGBA()
						r, g, bl = r+pr>>8, g+pg>>8, bl+pb>>8
					}
					n++
				}
			}
			o := out.Pix[out.PixOffset(x, y):]
			o[0], o[1], o[2], o[3] = uint8(r/n), uint8(g/n), uint8(bl/n), 0xff
		}
	}
	return out
}

// Series is one drums_* sample of GET /ui/api/metrics: a gauge's or
// counter's value, or a histogram's count and sum.
type Series struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  *float64          `json:"value,omitempty"`
	Count  *uint64           `json:"count,omitempty"`
	Sum    *float64          `json:"sum,omitempty"`
}

// summary is the drums_* series of the registry, sorted, for the page's
// charts, which sample it over time (Prometheus scrapes /metrics; the
// page would otherwise parse its text format).
func (m *metrics) summary() ([]Series, error) {
	fams, err := m.reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	out := []Series{}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "drums_") {
			continue
		}
		for _, mt := range f.GetMetric() {
			s := Series{Name: f.GetName()}
			for _, l := range mt.GetLabel() {
				if s.Labels == nil {
					s.Labels = map[string]string{}
				}
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				s.Value = ptr(mt.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				s.Value = ptr(mt.GetCounter().GetValue())
			case dto.MetricType_HISTOGRAM:
				s.Count, s.Sum = ptr(mt.GetHistogram().GetSampleCount()), ptr(mt.GetHistogram().GetSampleSum())
			default:
				continue
			}
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// Thumbnail is a leased or warm desktop's screen, thumbWidth pixels wide,
// as a PNG at most thumbTTL old.
func (m *Manager) Thumbnail(ctx context.Context, id string) ([]byte, error) {
	guest, err := m.thumbnailGuest(id)
	if err != nil {
		return nil, err
	}
	return m.thumbs.get(ctx, id, guest)
}

// thumbnailGuest is the guestd URL of desktop id when it has a screen to
// show.
func (m *Manager) thumbnailGuest(id string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.lookupLocked(id)
	if err != nil {
		return "", err
	}
	if d.state != client.StateLeased && d.state != client.StateReady {
		return "", fmt.Errorf("desktop %q is %s: no screen to show: %w", id, d.state, ErrConflict)
	}
	return d.view().GuestURL, nil
}
