// The daemon's page: polls /v1/desktops and /v1/metrics and redraws. Data
// only ever reaches the DOM as textContent or attributes.
'use strict';

const refreshMs = 3000;      // the desktops and their thumbnails
const sampleMs = 5000;       // the metrics the charts sample
const keepSamples = 60;      // 5 minutes of chart
const livePort = 8006;       // every desktop's live view (guestd --vnc-listen)
const colors = ['#1f77b4', '#2ca02c', '#d62728', '#9467bd', '#ff7f0e', '#8c564b'];

const cards = new Map();     // desktop id -> card element

async function getJSON(path) {
  const r = await fetch(path, {credentials: 'same-origin', cache: 'no-store'});
  if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + (await r.text()).slice(0, 200));
  return r.json();
}

function showError(e) {
  const el = document.getElementById('error');
  el.hidden = !e;
  el.textContent = e ? String(e.message || e) : '';
}

function age(since) {
  let s = Math.max(0, Math.round((Date.now() - Date.parse(since)) / 1000));
  if (s < 120) return s + ' s';
  s = Math.round(s / 60);
  return s < 120 ? s + ' min' : Math.round(s / 60) + ' h';
}

function set(card, cls, text) { card.querySelector('.' + cls).textContent = text; }

function newCard(id) {
  const card = document.getElementById('card').content.firstElementChild.cloneNode(true);
  card.dataset.id = id;
  const img = card.querySelector('.thumb');
  img.dataset.id = id;
  // One thumbnail request at a time per card: the next waits for this one.
  img.addEventListener('load', () => { img.dataset.loading = ''; img.dataset.loads = String(Number(img.dataset.loads || 0) + 1); });
  img.addEventListener('error', () => { img.dataset.loading = ''; });
  return card;
}

function render(desktops) {
  const list = document.getElementById('desktops');
  const seen = new Set();
  for (const d of desktops) {
    seen.add(d.id);
    let card = cards.get(d.id);
    if (!card) { card = newCard(d.id); cards.set(d.id, card); }
    list.appendChild(card); // in the daemon's order
    set(card, 'id', d.id);
    const st = card.querySelector('.state');
    st.textContent = d.state;
    st.className = 'state state-' + d.state;
    set(card, 'holder', d.holder || '—');
    set(card, 'expires', d.lease_expires ? new Date(d.lease_expires).toLocaleTimeString() : '—');
    set(card, 'image', d.image || '(default)');
    set(card, 'age', age(d.created));
    set(card, 'takeover', d.takeover ? '(takeover on)' : '(view-only)');
    const live = d.address ? 'http://' + d.address + ':' + livePort + '/' : '';
    for (const a of card.querySelectorAll('a.live, a.live-link')) {
      if (live) a.href = live; else a.removeAttribute('href');
    }
    card.querySelector('.live-link').textContent = live || '—';
    const img = card.querySelector('.thumb');
    if ((d.state === 'leased' || d.state === 'ready') && !img.dataset.loading) {
      img.dataset.loading = '1';
      img.src = '/ui/api/desktops/' + encodeURIComponent(d.id) + '/thumbnail?t=' + Date.now();
    }
  }
  for (const [id, card] of cards) {
    if (!seen.has(id)) { card.remove(); cards.delete(id); }
  }
  document.getElementById('empty').hidden = desktops.length > 0;
}

async function refresh() {
  try {
    const [desktops, health] = await Promise.all([getJSON('/v1/desktops'), getJSON('/v1/health')]);
    render(desktops);
    const counts = Object.entries(health.desktops).filter(([, n]) => n > 0).map(([s, n]) => n + ' ' + s);
    document.getElementById('summary').textContent =
      desktops.length + ' desktops of ' + health.capacity + (counts.length ? ': ' + counts.join(', ') : '') +
      ' · daemon up ' + age(health.started);
    showError(null);
  } catch (e) { showError(e); }
}

// Charts: each sample is {t, series}; a chart draws lines of numbers
// derived from consecutive samples.
const samples = [];

function pick(series, name, labels) {
  return series.filter(s => s.name === name &&
    Object.entries(labels || {}).every(([k, v]) => (s.labels || {})[k] === v));
}
function total(series, name, field) {
  return pick(series, name).reduce((a, s) => a + (s[field] || 0), 0);
}

function drawChart(id, lines) {
  const svg = document.getElementById('chart-' + id);
  const legend = document.getElementById('legend-' + id);
  while (svg.firstChild) svg.firstChild.remove();
  legend.textContent = '';
  const ns = 'http://www.w3.org/2000/svg';
  let top = 1;
  for (const l of lines) for (const v of l.values) if (v !== null && v > top) top = v;
  lines.forEach((l, i) => {
    const color = colors[i % colors.length];
    const pts = [];
    l.values.forEach((v, j) => {
      if (v === null) return;
      pts.push((j * 300 / (keepSamples - 1)).toFixed(1) + ',' + (115 - v * 110 / top).toFixed(1));
    });
    const pl = document.createElementNS(ns, 'polyline');
    pl.setAttribute('points', pts.join(' '));
    pl.setAttribute('fill', 'none');
    pl.setAttribute('stroke', color);
    pl.setAttribute('stroke-width', '1.5');
    svg.appendChild(pl);
    const last = l.values.filter(v => v !== null).pop();
    const sp = document.createElement('span');
    sp.style.color = color;
    sp.textContent = l.name + ' ' + (last === undefined ? '—' : +last.toFixed(1));
    legend.appendChild(sp);
  });
  const max = document.createElementNS(ns, 'text');
  max.setAttribute('x', '2'); max.setAttribute('y', '10'); max.setAttribute('font-size', '9');
  max.textContent = +top.toFixed(1);
  svg.appendChild(max);
}

// deltas is, over consecutive samples, the change of f per minute, or its
// change in sum over change in count (a mean) when f gives [sum, count].
function deltas(f, mean) {
  return samples.map((s, i) => {
    if (i === 0) return null;
    const a = f(samples[i - 1].series), b = f(s.series);
    if (mean) { const n = b[1] - a[1]; return n > 0 ? 1000 * (b[0] - a[0]) / n : null; }
    return (b - a) * 60000 / (s.t - samples[i - 1].t);
  });
}

function drawCharts() {
  const states = ['ready', 'leased', 'creating', 'recycling', 'failed'];
  drawChart('states', states.map(st => ({name: st,
    values: samples.map(s => (pick(s.series, 'drums_desktops', {state: st})[0] || {}).value || 0)})));
  drawChart('rates', [
    {name: 'leases', values: deltas(se => total(se, 'drums_lease_seconds', 'count'))},
    {name: 'creates', values: deltas(se => total(se, 'drums_create_seconds', 'count'))},
    {name: 'expired', values: deltas(se => total(se, 'drums_leases_expired_total', 'value'))},
  ]);
  const lat = name => se => [total(se, name, 'sum'), total(se, name, 'count')];
  drawChart('latency', [
    {name: 'lease', values: deltas(lat('drums_lease_seconds'), true)},
    {name: 'create', values: deltas(lat('drums_create_seconds'), true)},
    {name: 'revert', values: deltas(lat('drums_revert_seconds'), true)},
  ]);
}

async function sample() {
  try {
    samples.push({t: Date.now(), series: await getJSON('/ui/api/metrics')});
    while (samples.length > keepSamples) samples.shift();
    drawCharts();
  } catch (e) { showError(e); }
}

refresh();
sample();
setInterval(refresh, refreshMs);
setInterval(sample, sampleMs);
