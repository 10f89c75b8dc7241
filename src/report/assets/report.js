// The HTML report's script. It reads the page model (script#eaglesim-view), the --json document
// (script#eaglesim-data) and the verify-step timelines (script#eaglesim-timelines), and draws
// them with uPlot. Every number, verdict and choice it shows (tok/s curves, which row is best,
// which strategies are lower bounds, their order and facts) is computed by eaglesim
// (src/report/html_*view*.cpp): this file only reads, filters and draws.
//
// What each chart was given is written onto it for readers and tests: the chart element has
// data-chart, the selection it shows (data-model, data-topology, ...), data-points (values handed
// to the library) and data-ink (coloured pixels painted in the plotting area); its "numbers"
// table lists every value with data-series / data-row / data-value.
(function () {
  'use strict';

  const byId = (id) => document.getElementById(id);
  const readJson = (id) => {
    const node = byId(id);
    return node ? JSON.parse(node.textContent) : null;
  };
  // The document's rows come packed (html_report.cpp, pack_rows): key names once, a value array
  // per row, a text column's values as indices into its list; a row that cannot run leaves out the
  // metrics it does not have, as the --json does. A sweep page holds the rows it draws
  // (view.page_rows), so rows are looked up by their grid index.
  const unpackRows = (d) => {
    if (!d || !d.rows_packed) return d;
    const cols = d.rows_packed.columns, strings = d.rows_packed.strings || {};
    const lists = cols.map((k) => strings[k] || null);
    const status = cols.indexOf('status');
    const statusOf = (v) => (lists[status] && v[status] !== null ? lists[status][v[status]] : v[status]);
    d.rows = d.rows_packed.values.map((v) => {
      const row = {};
      const ok = statusOf(v) === 'ok';
      cols.forEach((k, i) => {
        if (!ok && v[i] === null) return;
        row[k] = lists[i] && v[i] !== null ? lists[i][v[i]] : v[i];
      });
      return row;
    });
    delete d.rows_packed;
    return d;
  };
  const doc = unpackRows(readJson('eaglesim-data'));
  const view = readJson('eaglesim-view');
  const timelines = readJson('eaglesim-timelines') || [];
  const rowList = (view.kind === 'sweep' ? doc.rows : view.rows) || [];
  const rows = {};
  rowList.forEach((r) => { rows[r.index] = r; });
  // tok/s against the acceptance rate: the row's draft shape times its factor (html_view_rows.hpp,
  // curves_json); the break-even point where it meets the row's own plain decoding.
  const curves = view.explorer ? view.explorer.curves : null;
  const curveOf = (r) => {
    const c = curves.rows[r.index];
    if (!c) return null;
    const be = r.breakeven_accept_rate;
    return {
      tokens_per_s: curves.shapes[c[0]].map((e) => Math.round(e * c[1] * 10) / 10),
      breakeven: be !== null && be !== undefined && r.decode_tokens_per_s > 0 ? [be, r.decode_tokens_per_s] : null,
    };
  };

  // ---------------------------------------------------------------- presentation
  const PALETTE = ['#2563eb', '#f97316', '#059669', '#9333ea', '#dc2626', '#0891b2', '#ca8a04', '#db2777', '#4f46e5'];
  const SEGMENT_COLORS = ['#3b82f6', '#f97316', '#94a3b8', '#a855f7'];
  const PLAIN_COLOR = '#334155';
  const BAR_STATES = [
    { key: 'pays', label: 'pays off at a swept acceptance rate', color: '#10b981' },
    { key: 'short', label: 'needs a higher acceptance than swept', color: '#f59e0b' },
    { key: 'never', label: 'never pays off (not even at a=1)', color: '#fca5a5' },
    { key: 'unfit', label: 'cannot run', color: '#cbd5e1' },
  ];
  const KIND_COLORS = {
    gemm: '#3b82f6', grouped_gemm: '#1e40af', attention: '#14b8a6', allreduce: '#f97316', rmsnorm: '#94a3b8',
    residual_add: '#cbd5e1', act: '#a8a29e', embedding: '#84cc16', lm_head: '#8b5cf6', other: '#475569',
  };
  const WAIT_COLOR = '#fed7aa';
  const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
  const LABEL_FONT = '600 12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

  const strategies = {};
  (view.strategies || []).forEach((s, i) => { strategies[s.name] = Object.assign({ color: PALETTE[i % PALETTE.length] }, s); });
  const strategy = (name) => strategies[name] || { name: name, lower_bound: false, color: '#475569' };

  function el(tag, attrs, parent, text) {
    const node = document.createElement(tag);
    for (const k in attrs || {}) if (attrs[k] !== undefined && attrs[k] !== null) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    return Number(v).toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function fmtUs(us) {
    if (us === null || us === undefined) return 'n/a';
    return us >= 10000 ? fmt(us / 1000, 2) + ' ms' : fmt(us, 1) + ' µs';
  }
  const acceptanceOf = (mode, value) => view.acceptances.find((a) => a.mode === mode && a.value === value);
  const acceptanceLabel = (mode, value) => (acceptanceOf(mode, value) || { label: mode + ' ' + value }).label;
  // Text from the page model: odd-numbered parts are emphasised.
  function parts(host, list) {
    list.forEach((p, i) => { if (i % 2) el('b', null, host, p); else host.appendChild(document.createTextNode(p)); });
  }

  // ---------------------------------------------------------------- charts
  const plots = [];
  function destroyPlots(container) {
    for (let i = plots.length - 1; i >= 0; --i)
      if (container.contains(plots[i].host)) { plots[i].u.destroy(); plots.splice(i, 1); }
    container.innerHTML = '';
  }
  window.addEventListener('resize', () => plots.forEach((p) => p.u.setSize({ width: p.host.clientWidth, height: p.height })));

  function chartBox(host, name, title, note, attrs) {
    const box = el('div', Object.assign({ 'class': 'chart', 'data-chart': name }, attrs || {}), host);
    el('h3', null, box, title);
    if (note) el('p', { 'class': 'note' }, box, note);
    return box;
  }
  function emptyChart(box, text) {
    box.setAttribute('data-empty', 'true');
    box.setAttribute('data-points', 0);
    el('div', { 'class': 'empty' }, box, text);
  }
  // Coloured pixels in the plotting area: what the series painted, not the greys of grid and text.
  function ink(u) {
    const b = u.bbox;
    if (b.width < 1 || b.height < 1) return 0;
    const px = u.ctx.getImageData(b.left, b.top, b.width, b.height).data;
    let n = 0;
    for (let i = 0; i < px.length; i += 16)
      if (px[i + 3] > 0 && Math.max(px[i], px[i + 1], px[i + 2]) - Math.min(px[i], px[i + 1], px[i + 2]) > 60) ++n;
    return n;
  }
  function axis(extra) {
    return Object.assign({ stroke: '#475569', font: FONT, labelFont: LABEL_FONT, grid: { stroke: '#eef2f7', width: 1 },
      ticks: { stroke: '#cbd5e1', width: 1 } }, extra);
  }
  // Scale ranges from uPlot's own padding rules: from zero, with headroom above the data.
  const FROM_ZERO = { min: { pad: 0, soft: 0, mode: 1 }, max: { pad: 0.1, soft: 0, mode: 3 } };
  const PADDED = (u, min, max) => uPlot.rangeNum(min, max, { min: { pad: 0.15 }, max: { pad: 0.15 } });
  const CATEGORIES = (count) => () => [-0.5, count - 0.5];

  function plot(box, opts, data, points) {
    const host = el('div', { 'class': 'plot-host' }, box);
    const o = Object.assign({ width: Math.max(320, host.clientWidth || 640) }, opts);
    o.hooks = Object.assign({}, opts.hooks);
    // Measured once: reading pixels back on every redraw (zoom, resize) would slow the page.
    o.hooks.draw = [].concat(o.hooks.draw || [], [(u) => { if (!box.hasAttribute('data-ink')) box.setAttribute('data-ink', ink(u)); }]);
    box.setAttribute('data-points', points);
    const u = new uPlot(o, data, host);
    plots.push({ u: u, host: host, height: o.height });
    return u;
  }
  // Draws on a chart's canvas from a uPlot hook, in canvas pixels (px: device pixels per CSS
  // pixel, b: the plotting area), with left-aligned text in the axes' font.
  function onCanvas(u, draw) {
    const c = u.ctx, px = uPlot.pxRatio;
    c.save();
    c.font = FONT.replace('11px', 11 * px + 'px');
    c.textAlign = 'left';
    c.textBaseline = 'alphabetic';
    draw(c, px, u.bbox);
    c.restore();
  }
  // Dashed lines across the plotting area at the swept acceptance rates (on scale `key`), labelled.
  function sweptRates(u, key, c, px, b, color, label) {
    c.strokeStyle = color;
    c.setLineDash([3 * px, 3 * px]);
    view.acceptances.filter((a) => a.rate).forEach((a) => {
      const x = u.valToPos(a.value, key, true);
      c.beginPath(); c.moveTo(x, b.top); c.lineTo(x, b.top + b.height); c.stroke();
      c.fillText(label(a), x + 4 * px, b.top + 10 * px);
    });
    c.setLineDash([]);
  }
  function strategySeries(name) {
    const s = strategy(name);
    return { label: name + (s.lower_bound ? ' (lower bound)' : ''), stroke: s.color, width: s.lower_bound ? 1.5 : 2,
      dash: s.lower_bound ? [4, 4] : undefined, points: { show: true, size: 6, fill: s.color } };
  }
  function plainSeries() {
    return { label: 'plain decoding (fastest)', stroke: PLAIN_COLOR, width: 1.5, dash: [6, 4], points: { show: false } };
  }
  // The values behind a chart, as a table one can open under it.
  function numbersTable(box, header, lines) {
    const d = el('details', { 'class': 'numbers' }, box);
    el('summary', null, d, 'numbers');
    const t = el('table', { 'class': 'data' }, d);
    const tr = el('tr', null, el('thead', null, t));
    header.forEach((h) => el('th', null, tr, h));
    const tb = el('tbody', null, t);
    lines.forEach((l) => {
      const row = el('tr', l.attrs, tb);
      l.cells.forEach((c) => el('td', null, row, String(c)));
    });
  }
  function legend(box, items) {
    const div = el('div', { 'class': 'legend' }, box);
    items.forEach((it) => {
      const s = el('span', null, div);
      el('span', { 'class': 'sw', style: 'background:' + it.color }, s);
      s.appendChild(document.createTextNode(it.label));
    });
  }
  function selectionAttrs(sel) {
    const acc = sel.acceptance || {};
    return { 'data-model': sel.model, 'data-topology': sel.topology, 'data-weight-dtype': sel.dtype, 'data-tp': sel.tp,
      'data-accept-mode': acc.mode, 'data-accept-value': acc.value, 'data-draft-tokens': sel.n,
      'data-batch': sel.batch, 'data-eagle-topk': sel.topk };
  }

  // tok/s against draft tokens, one line per strategy, and the fastest plain decoding dashed.
  function chartTokpsVsDraft(host, sel, selRows, plain) {
    const box = chartBox(host, 'tokps-vs-draft', 'Throughput against draft tokens',
      'tok/s of every strategy at each swept N; dashed: the fastest plain decoding at this TP and weights (lower bounds left out).',
      selectionAttrs(Object.assign({}, sel, { n: undefined })));
    const ok = selRows.filter((r) => r.status === 'ok');
    if (!ok.length) return emptyChart(box, 'No combination of this selection can run (see the table below).');
    const xs = view.explorer.draft_tokens;
    const series = [{ label: 'N' }], data = [xs], lines = [];
    view.strategies.forEach((s) => {
      const mine = ok.filter((r) => r.strategy === s.name);
      if (!mine.length) return;
      data.push(xs.map((n) => { const r = mine.find((x) => x.draft_tokens === n); return r ? r.tokens_per_s : null; }));
      series.push(strategySeries(s.name));
      mine.forEach((r) => lines.push({ attrs: { 'data-series': s.name, 'data-row': r.index, 'data-x': r.draft_tokens,
        'data-y': r.tokens_per_s }, cells: [s.name, r.draft_tokens, fmt(r.tokens_per_s, 1)] }));
    });
    if (plain) {
      data.push(xs.map(() => plain.tokens_per_s));
      series.push(plainSeries());
      lines.push({ attrs: { 'data-series': 'plain-decode', 'data-row': plain.row, 'data-value': plain.tokens_per_s },
        cells: ['plain decoding', '', fmt(plain.tokens_per_s, 1)] });
    }
    plot(box, { height: 320, series: series, scales: { x: { time: false, range: PADDED }, y: { range: FROM_ZERO } },
      axes: [axis({ label: 'draft tokens per cycle (N)', splits: () => xs }), axis({ label: 'tokens / s', size: 64 })] },
      data, lines.length);
    numbersTable(box, ['series', 'N', 'tok/s'], lines);
  }

  // Total tok/s against batch: the best configuration per batch (points labelled with it) and the
  // fastest plain decoding at that batch, dashed.
  function chartTokpsVsBatch(host, c) {
    const box = chartBox(host, 'tokps-vs-batch', c.model + ' on ' + c.topology + ' at ' + c.acceptance,
      'Speculation ' + c.limit + '.', { 'data-model': c.model, 'data-topology': c.topology, 'data-acceptance': c.acceptance });
    if (!c.best.length) return emptyChart(box, 'Nothing runs on this topology (see “Cannot run”).');
    const xs = c.batches, lines = [];
    const at = (list, b) => { const p = list.find((x) => x.batch === b); return p ? p.total_tokens_per_s : null; };
    const data = [xs.map((b, i) => i), xs.map((b) => at(c.best, b)), xs.map((b) => at(c.plain, b))];
    c.best.forEach((p) => lines.push({ attrs: { 'data-series': 'best', 'data-row': p.row, 'data-x': p.batch,
      'data-y': p.total_tokens_per_s, 'data-label': p.label }, cells: ['best: ' + p.label, p.batch, fmt(p.total_tokens_per_s, 1)] }));
    c.plain.forEach((p) => lines.push({ attrs: { 'data-series': 'plain-decode', 'data-row': p.row, 'data-x': p.batch,
      'data-y': p.total_tokens_per_s }, cells: ['plain decoding', p.batch, fmt(p.total_tokens_per_s, 1)] }));
    const labels = (u) => onCanvas(u, (g, px) => {
      g.fillStyle = '#0f172a';
      c.best.forEach((p) => {
        const i = xs.indexOf(p.batch);
        g.fillText(p.label, u.valToPos(i, 'x', true) + 4 * px, u.valToPos(p.total_tokens_per_s, 'y', true) - 6 * px);
      });
    });
    plot(box, { height: 320, series: [{ label: 'batch' },
      { label: 'best configuration', stroke: '#2563eb', width: 2, points: { show: true, size: 8, fill: '#2563eb' } },
      plainSeries()],
      scales: { x: { time: false, range: CATEGORIES(xs.length) }, y: { range: FROM_ZERO } },
      axes: [axis({ label: 'batch (concurrent requests)', splits: () => xs.map((b, i) => i), values: () => xs.map(String) }),
        axis({ label: 'total tokens / s', size: 64 })],
      hooks: { draw: [labels] } }, data, lines.length);
    numbersTable(box, ['series', 'batch', 'total tok/s'], lines);
  }

  // Stacked bars: where one cycle's time goes, per strategy.
  function chartCycle(host, sel, atN) {
    const box = chartBox(host, 'cycle-breakdown', 'Where a cycle goes (N=' + sel.n + ')',
      'One speculative cycle = N draft-head forwards + one verify forward over N+1 tokens. Bars are stacked µs.',
      selectionAttrs(sel));
    const ok = view.strategies.map((s) => atN.find((r) => r.strategy === s.name && r.status === 'ok')).filter(Boolean);
    if (!ok.length) return emptyChart(box, 'No strategy can run at this selection.');
    const segs = view.segments;
    // Stacking: each series is drawn from zero to the top of its segment, the tallest first.
    const tops = segs.map(() => []);
    ok.forEach((r, i) => {
      let top = 0;
      segs.forEach((seg, k) => { top += r[seg.key] || 0; tops[k][i] = top; });
    });
    const bars = uPlot.paths.bars({ size: [0.6, 80] });
    const series = [{ label: 'strategy', value: (u, v, si, i) => (i === null ? '' : ok[i].strategy) }];
    const data = [ok.map((r, i) => i)];
    for (let k = segs.length - 1; k >= 0; --k) {
      const seg = segs[k];
      series.push({ label: seg.label, fill: SEGMENT_COLORS[k], stroke: SEGMENT_COLORS[k], width: 0, paths: bars,
        points: { show: false }, value: (u, v, si, i) => (i === null ? '' : fmtUs(ok[i][seg.key])) });
      data.push(tops[k]);
    }
    const totals = (u) => onCanvas(u, (c, px) => {
      c.font = LABEL_FONT.replace('12px', 11 * px + 'px');
      c.fillStyle = '#0f172a';
      c.textAlign = 'center';
      ok.forEach((r, i) => c.fillText(fmtUs(r.cycle_us), u.valToPos(i, 'x', true),
        u.valToPos(tops[segs.length - 1][i], 'y', true) - 6 * px));
    });
    plot(box, { height: 320, series: series, legend: { live: true },
      scales: { x: { time: false, range: CATEGORIES(ok.length) }, y: { range: FROM_ZERO } },
      axes: [axis({ label: 'allreduce strategy', splits: () => data[0], values: () => ok.map((r) => r.strategy), grid: { show: false } }),
        axis({ label: 'µs per cycle', size: 64 })],
      hooks: { draw: [totals] } }, data, ok.length * segs.length);
    const lines = [];
    ok.forEach((r) => segs.forEach((seg) => lines.push({ attrs: { 'data-series': seg.name, 'data-strategy': r.strategy,
      'data-row': r.index, 'data-value': r[seg.key] }, cells: [r.strategy, seg.label, fmtUs(r[seg.key])] })));
    numbersTable(box, ['strategy', 'part', 'time'], lines);
  }

  // tok/s as a function of the per-position acceptance rate, one curve per strategy.
  function chartAccept(host, sel, atN, plain) {
    const box = chartBox(host, 'tokps-vs-accept', 'Throughput against acceptance rate (N=' + sel.n + ')',
      'Chain drafts: each draft token is accepted with rate a, so a cycle yields E = 1 + a + … + a^N tokens (a tree, ' +
      'eagle_topk > 1: the tree model at rate a). Where a line meets the plain decoding of its strategy is its ' +
      'break-even acceptance rate (dot).', selectionAttrs(sel));
    const ok = view.strategies.map((s) => atN.find((r) => r.strategy === s.name && r.status === 'ok' && curveOf(r)))
      .filter(Boolean);
    if (!ok.length) return emptyChart(box, 'No strategy can run at this selection.');
    const series = [{ label: 'a', value: (u, v) => (v === null ? '' : 'a=' + fmt(v, 3)) }], data = [curves.rates], lines = [];
    ok.forEach((r) => {
      const c = curveOf(r);
      series.push(Object.assign(strategySeries(r.strategy), { points: { show: false } }));
      data.push(c.tokens_per_s);
      lines.push({ attrs: { 'data-series': r.strategy, 'data-row': r.index, 'data-cycle-us': r.cycle_us,
        'data-breakeven': c.breakeven ? c.breakeven[0] : 'none', 'data-curve': c.tokens_per_s.join(',') },
        cells: [r.strategy, fmtUs(r.cycle_us), c.breakeven ? 'a=' + fmt(c.breakeven[0], 3) : 'never'] });
    });
    if (plain) {
      data.push(curves.rates.map(() => plain.tokens_per_s));
      series.push(plainSeries());
      lines.push({ attrs: { 'data-series': 'plain-decode', 'data-row': plain.row, 'data-value': plain.tokens_per_s },
        cells: ['plain decoding', '', fmt(plain.tokens_per_s, 1) + ' tok/s'] });
    }
    const marks = (u) => onCanvas(u, (c, px, b) => {
      c.fillStyle = '#64748b';
      sweptRates(u, 'x', c, px, b, '#cbd5e1', (a) => a.label);
      c.lineWidth = 2 * px;
      ok.forEach((r) => {
        const be = curveOf(r).breakeven;
        if (!be) return;
        c.beginPath();
        c.arc(u.valToPos(be[0], 'x', true), u.valToPos(be[1], 'y', true), 4 * px, 0, 2 * Math.PI);
        c.fillStyle = '#fff'; c.fill();
        c.strokeStyle = strategy(r.strategy).color; c.stroke();
      });
    });
    plot(box, { height: 320, series: series, scales: { x: { time: false, range: [0, 1] }, y: { range: FROM_ZERO } },
      axes: [axis({ label: 'acceptance rate per draft position (a)' }), axis({ label: 'tokens / s', size: 64 })],
      hooks: { draw: [marks] } }, data, ok.length * curves.rates.length);
    box.setAttribute('data-rates', curves.rates.join(','));
    numbersTable(box, ['strategy', 'cycle', 'break-even'], lines);
  }

  // Horizontal bars: the lowest acceptance rate at which EAGLE-3 beats plain decoding.
  function chartBreakeven(host, be, attrs) {
    const box = chartBox(host, 'breakeven', be.title, be.note, attrs);
    const bars = be.bars;
    if (!bars.length) return emptyChart(box, 'Nothing to show.');
    const stateOf = (b) => (b.state === 'ok' ? (b.pays_at_swept ? 'pays' : 'short') : b.state);
    const xs = bars.map((b, i) => i);
    const path = uPlot.paths.bars({ size: [0.7, 26] });
    const series = [{ label: 'category' }], data = [xs];
    BAR_STATES.forEach((st) => {
      series.push({ label: st.label, fill: st.color, stroke: st.color, width: 0, paths: path, points: { show: false } });
      // Bars that have no value fill the whole axis, with their reason written on them.
      data.push(bars.map((b) => (stateOf(b) !== st.key ? null : b.state === 'ok' ? b.value : 1)));
    });
    const labels = (u) => onCanvas(u, (c, px, b) => {
      c.textBaseline = 'middle';
      c.fillStyle = '#0f172a';
      // A stub at the start of every bar that has a value, so that a break-even of 0 (pays off at
      // any acceptance) still shows.
      const stubH = Math.min(26 * px, 0.7 * Math.abs(u.valToPos(1, 'x', true) - u.valToPos(0, 'x', true)));
      bars.forEach((bar, i) => {
        const y = u.valToPos(i, 'x', true);
        if (bar.state === 'ok') {
          c.fillStyle = BAR_STATES.find((st) => st.key === stateOf(bar)).color;
          c.fillRect(b.left, y - stubH / 2, 3 * px, stubH);
        }
        const x = bar.state === 'ok' ? u.valToPos(bar.value, 'y', true) + 6 * px : b.left + 8 * px;
        c.fillStyle = '#0f172a';
        c.fillText(bar.text, x, y);
      });
      sweptRates(u, 'y', c, px, b, '#0f172a', (a) => 'swept ' + a.label);
    });
    const longest = Math.max.apply(null, bars.map((b) => b.label.length));
    plot(box, { height: 70 + bars.length * 34, series: series, legend: { live: false },
      cursor: { show: false },
      scales: { x: { time: false, ori: 1, dir: -1, range: CATEGORIES(bars.length) }, y: { ori: 0, range: [0, 1] } },
      axes: [axis({ scale: 'x', side: 3, splits: () => xs, values: () => bars.map((b) => b.label), grid: { show: false },
        size: 24 + 7 * longest }),
        axis({ scale: 'y', side: 2, space: 60, label: 'break-even acceptance rate per draft position (lower is better)' })],
      hooks: { draw: [labels] } }, data, bars.length);
    numbersTable(box, ['category', 'break-even', 'state', 'detail'], bars.map((b) => ({
      attrs: { 'data-series': 'breakeven', 'data-category': b.label, 'data-value': b.value === null ? 'none' : b.value,
        'data-state': b.state }, cells: [b.label, b.value === null ? 'n/a' : fmt(b.value, 3), b.state, b.detail] })));
  }

  // One verify step per rank: every op as a bar on its rank's row, drawn onto uPlot's canvas.
  function chartWaterfall(host, tl, name, end, title) {
    const box = chartBox(host, name, title, null, { 'data-model': tl.model, 'data-label': tl.label, 'data-ranks': tl.ranks });
    const ranks = tl.spans.length ? tl.ranks : 0;
    const spans = tl.spans;
    const draw = (u) => {
      const c = u.ctx, b = u.bbox, x0 = u.scales.x.min, x1 = u.scales.x.max;
      const rowH = Math.abs(u.valToPos(1, 'y', true) - u.valToPos(0, 'y', true));
      let drawn = 0;
      c.save();
      c.beginPath(); c.rect(b.left, b.top, b.width, b.height); c.clip();
      spans.forEach((s) => {
        if (s[3] < x0 || s[2] > x1) return;
        const left = u.valToPos(s[2], 'x', true), right = u.valToPos(s[3], 'x', true);
        const top = u.valToPos(s[0], 'y', true) - rowH * 0.38;
        c.fillStyle = KIND_COLORS[tl.kinds[s[1]]] || '#475569';
        c.fillRect(left, top, Math.max(1, right - left), rowH * 0.76);
        if (s[4] > 0) {
          c.fillStyle = WAIT_COLOR;
          c.fillRect(left, top, Math.max(0.5, u.valToPos(s[2] + s[4], 'x', true) - left), rowH * 0.76);
        }
        ++drawn;
      });
      c.restore();
      box.setAttribute('data-spans', drawn);
    };
    const hover = el('div', { 'class': 'hover' }, null);
    const onCursor = (u) => {
      const { left, top } = u.cursor;
      if (left === undefined || left < 0) { hover.textContent = ''; return; }
      const t = u.posToVal(left, 'x'), rank = Math.round(u.posToVal(top, 'y'));
      const s = spans.find((x) => x[0] === rank && x[2] <= t && t <= x[3]);
      hover.textContent = !s ? '' : 'rank ' + s[0] + ' · ' + tl.names[s[6]] + ' (' + tl.kinds[s[1]] +
        (s[5] >= 0 ? ', layer ' + s[5] : '') + '): ' + fmt(s[2], 1) + '–' + fmt(s[3], 1) + ' µs' +
        (s[4] > 0 ? ', waited ' + fmt(s[4], 2) + ' µs' : '');
    };
    const rankIds = [];
    for (let r = 0; r < ranks; ++r) rankIds.push(r);
    plot(box, { height: 80 + ranks * 24, legend: { show: false },
      cursor: { drag: { x: true, y: false }, points: { show: false }, y: false },
      series: [{}, { label: 'spans', paths: () => null, points: { show: false } }],
      scales: { x: { time: false, range: (u, min, max) => [min, max] }, y: { range: CATEGORIES(ranks), dir: -1 } },
      axes: [axis({ label: 'time since the step started (µs)' }),
        axis({ splits: () => rankIds, values: () => rankIds.map((r) => 'rank ' + r), grid: { show: false }, size: 64 })],
      hooks: { draw: [draw], setCursor: [onCursor] } }, [[0, end], [null, null]], spans.length);
    box.appendChild(hover);
    const kinds = tl.kinds.filter((k, i) => spans.some((s) => s[1] === i));
    legend(box, kinds.map((k) => ({ color: KIND_COLORS[k] || '#475569', label: k }))
      .concat([{ color: WAIT_COLOR, label: 'allreduce: waiting for the slowest rank' }]));
  }

  function waterfallSection(host, tl) {
    destroyPlots(host);
    if (!tl) { el('p', { 'class': 'muted' }, host, 'No timeline for this selection.'); return; }
    el('p', { 'class': 'explain' }, host, tl.caption);
    chartWaterfall(host, tl, 'waterfall', tl.end_us, 'Whole verify step');
    if (tl.zoom_end_us !== null) chartWaterfall(host, tl, 'waterfall-zoom', tl.zoom_end_us, tl.zoom_title);
  }

  // ---------------------------------------------------------------- tables
  function cellText(r, c) {
    if (c.key === 'acceptance') return acceptanceLabel(r.accept_mode, r.accept_value);
    const v = r[c.key];
    if (v === null || v === undefined) return '';
    return c.digits === undefined ? String(v) : fmt(v, c.digits) + (c.suffix || '');
  }
  function resultsTable(host, list, bestRow, limit) {
    host.innerHTML = '';
    const wrap = el('div', { 'class': 'table-wrap' }, host);
    const table = el('table', { 'class': 'data', id: 'results-table', 'data-rows': list.length }, wrap);
    const tr = el('tr', null, el('thead', null, table));
    view.columns.forEach((c) => el('th', { 'class': c.digits !== undefined ? 'num' : '' }, tr, c.label));
    const tbody = el('tbody', null, table);
    list.slice(0, limit).forEach((r) => {
      const row = el('tr', { 'data-index': r.index, 'class': r.index === bestRow ? 'best' : '' }, tbody);
      view.columns.forEach((c) => el('td', { 'class': c.digits !== undefined ? 'num' : '', 'data-key': c.key }, row, cellText(r, c)));
    });
    if (list.length > limit) {
      const b = el('button', { 'class': 'more' }, host, 'Show all ' + list.length + ' rows');
      b.onclick = () => resultsTable(host, list, bestRow, list.length);
    }
    if (!list.length) el('p', { 'class': 'muted' }, host, 'Nothing in this selection can run.');
  }
  function unfitTable(host, groups) {
    host.innerHTML = '';
    if (!groups.length) { el('p', { 'class': 'muted' }, host, 'Every combination can run.'); return; }
    const table = el('table', { 'class': 'data', id: 'unfit-table' }, el('div', { 'class': 'table-wrap' }, host));
    const tr = el('tr', null, el('thead', null, table));
    ['why', 'reason', 'topologies', 'TP', 'strategies', 'combinations'].forEach((h) => el('th', null, tr, h));
    const tb = el('tbody', null, table);
    groups.forEach((g) => {
      const row = el('tr', { 'data-status': g.status }, tb);
      el('td', null, row, g.status.replace(/_/g, ' '));
      el('td', { 'class': 'reason' }, row, g.reason);
      el('td', null, row, g.topologies.join(', '));
      el('td', null, row, g.tps.join(', '));
      el('td', null, row, g.strategies.join(', '));
      el('td', { 'class': 'num' }, row, String(g.count));
    });
  }
  function strategiesTable(host) {
    const table = el('table', { 'class': 'data strategies', id: 'strategies-table' }, host);
    const tr = el('tr', null, el('thead', null, table));
    ['strategy', 'role', 'numbers', 'residual + RMSNorm', 'what it is'].forEach((h) => el('th', null, tr, h));
    const tb = el('tbody', null, table);
    view.strategies.forEach((s) => {
      const row = el('tr', { 'data-strategy': s.name, 'data-lower-bound': s.lower_bound }, tb);
      const sw = el('td', null, row);
      el('span', { 'class': 'pill', style: 'background:' + strategy(s.name).color + ';color:#fff' }, sw, s.name);
      el('td', null, row, s.lower_bound ? 'lower bound (never “best”)' : s.selector ? 'selector' : 'deployable');
      el('td', null, row, s.exact ? 'exact' : 'lossy');
      el('td', null, row, s.fuses_residual_norm ? 'fused into the allreduce' : 'separate ops');
      el('td', { 'class': 'facts' }, row, s.description);
    });
  }
  function verdictCard(host, v) {
    const c = el('div', { 'class': 'verdict ' + v.state, 'data-verdict': v.state }, host);
    el('div', { 'class': 'model' }, c, v.model);
    el('div', { 'class': 'big' }, c, v.big);
    parts(el('div', { 'class': 'detail' }, c), v.detail);
    if (v.bullets.length) {
      const ul = el('ul', null, c);
      v.bullets.forEach((b) => el('li', null, ul, b));
    }
  }
  function headline() {
    const head = byId('headline');
    if (view.headline.summary) parts(el('p', { 'class': 'summary-line', id: 'summary' }, head), view.headline.summary);
    const cards = el('div', { 'class': 'headline' }, head);
    view.headline.verdicts.forEach((v) => verdictCard(cards, v));
  }
  function notes(list) {
    const ul = byId('notes');
    (list || []).forEach((n) => el('li', null, ul, n));
    if (!ul.children.length) el('li', { 'class': 'muted' }, ul, 'None.');
  }
  // A run's notes: the scenario's, then each distinct per-strategy note once with the strategies
  // that have it, as the text table's --verbose lists them.
  function runNotes(d) {
    const list = (d.scenario.notes || []).slice();
    const texts = [], owners = [];
    d.results.filter((r) => r.supported).forEach((r) => (r.notes || []).forEach((n) => {
      const i = texts.indexOf(n);
      if (i < 0) { texts.push(n); owners.push([r.strategy]); }
      else if (owners[i][owners[i].length - 1] !== r.strategy) owners[i].push(r.strategy);
    }));
    texts.forEach((t, i) => list.push(owners[i].join(', ') + ': ' + t));
    return list;
  }
  const plainAt = (sel) => view.explorer.plain.find((p) => p.model === sel.model && p.topology === sel.topology &&
    (sel.dtype === undefined || p.weight_dtype === sel.dtype) && p.tp === sel.tp &&
    (sel.batch === undefined || p.batch === sel.batch));
  const inOrder = (keep) => view.explorer.order.map((i) => rows[i]).filter(keep);

  // ---------------------------------------------------------------- views
  function renderRun() {
    const sc = doc.scenario;
    const sel = { model: sc.model, topology: sc.topology, tp: sc.tp, n: sc.draft_tokens,
      acceptance: acceptanceOf(sc.acceptance.mode, sc.acceptance.value) };
    const best = view.explorer.best_row;
    const grid = el('div', { 'class': 'grid2' }, byId('charts'));
    chartCycle(el('div', null, grid), sel, rowList);
    chartAccept(el('div', null, grid), sel, rowList, plainAt(sel));
    chartBreakeven(byId('breakeven'), view.breakeven[0], { 'data-topology': sc.topology });
    const wfHost = byId('waterfall-host'), wfSel = byId('waterfall-select');
    timelines.forEach((t, i) => el('option', { value: i }, wfSel, t.label));
    const shown = timelines.findIndex((t) => t.row === best);
    if (shown >= 0) wfSel.value = shown;
    wfSel.onchange = () => waterfallSection(wfHost, timelines[Number(wfSel.value)]);
    waterfallSection(wfHost, timelines[Number(wfSel.value)]);
    resultsTable(byId('table-host'), inOrder(() => true), best, 1000);
    unfitTable(byId('unfit-host'), view.unfit);
    notes(runNotes(doc));
  }

  function bestTable(host) {
    const table = el('table', { 'class': 'data', id: 'best-table' }, el('div', { 'class': 'table-wrap' }, host));
    const header = ['model', 'topology', 'accept', 'strategy', 'TP', 'N', 'dtype', 'tok/s', 'best plain tok/s', 'speedup', 'EAGLE-3'];
    const numeric = { 4: 1, 5: 1, 7: 1, 8: 1, 9: 1 };
    const tr = el('tr', null, el('thead', null, table));
    header.forEach((h, i) => el('th', { 'class': numeric[i] ? 'num' : '' }, tr, h));
    const tb = el('tbody', null, table);
    doc.best.forEach((b) => {
      const row = el('tr', { 'data-model': b.model, 'data-topology': b.topology, 'data-row': b.row === null ? 'none' : b.row }, tb);
      const acc = acceptanceLabel(b.accept_mode, b.accept_value);
      const cells = b.row === null ? [b.model, b.topology, acc, 'nothing fits', '', '', '', '', '', '', '']
        : [b.model, b.topology, acc, b.strategy, b.tp, b.draft_tokens, b.weight_dtype, fmt(b.tokens_per_s, 1),
          fmt(b.best_plain_tokens_per_s, 1), b.speedup_vs_best_plain === null ? 'n/a' : fmt(b.speedup_vs_best_plain, 2) + '×', ''];
      cells.forEach((c, i) => {
        const td = el('td', { 'class': numeric[i] ? 'num' : '' }, row, String(c));
        if (i === 10 && b.row !== null && b.eagle3_pays_off !== null)
          el('span', { 'class': 'pill ' + (b.eagle3_pays_off ? 'good' : 'bad') }, td, b.eagle3_pays_off ? 'pays off' : 'does not pay off');
      });
    });
  }

  function renderSweep() {
    const ax = doc.axes;
    bestTable(byId('best-host'));
    const controls = byId('controls');
    const sel = {};
    const topks = ax.spec_configs.map((c) => c.eagle_topk).filter((k, i, all) => all.indexOf(k) === i).sort((a, b) => a - b);
    function addSelect(label, key, values, text, onchange) {
      const l = el('label', null, controls, label);
      const s = el('select', { 'data-control': key }, l);
      values.forEach((v, i) => el('option', { value: i }, s, text(v)));
      s.onchange = () => onchange(values[Number(s.value)]);
      return (v) => { const i = values.indexOf(v); if (i >= 0) s.value = i; };
    }
    const set = {
      model: addSelect('model', 'model', ax.models, String, (v) => selectModel(v, null)),
      topology: addSelect('topology', 'topology', ax.topologies, String, (v) => { sel.topology = v; draw(); }),
      dtype: addSelect('weights', 'weight_dtype', ax.weight_dtypes, String, (v) => { sel.dtype = v; draw(); }),
      tp: addSelect('TP', 'tp', ax.tp, String, (v) => { sel.tp = v; draw(); }),
      batch: addSelect('batch', 'batch', ax.batch, String, (v) => { sel.batch = v; draw(); }),
      topk: addSelect('eagle_topk', 'eagle_topk', topks, String, (v) => { sel.topk = v; draw(); }),
      n: addSelect('draft tokens (bars, curves)', 'draft_tokens', ax.draft_tokens, String, (v) => { sel.n = v; draw(); }),
      acceptance: addSelect('acceptance', 'acceptance', view.acceptances, (a) => a.label, (v) => { sel.acceptance = v; draw(); }),
    };
    const matches = (r) => r.model === sel.model && r.topology === sel.topology && r.weight_dtype === sel.dtype &&
      r.tp === sel.tp && r.batch === sel.batch && r.eagle_topk === sel.topk &&
      r.accept_mode === sel.acceptance.mode && r.accept_value === sel.acceptance.value;

    // A model opens on its fastest configuration that runs (from the page model), else on the
    // first value of every axis.
    function selectModel(model, row) {
      if (row === null || row === undefined) row = (view.explorer.model_start.find((s) => s.model === model) || {}).row;
      const r = row === null || row === undefined ? null : rows[row];
      sel.model = model;
      sel.topology = r ? r.topology : ax.topologies[0];
      sel.dtype = r ? r.weight_dtype : ax.weight_dtypes[0];
      sel.tp = r ? r.tp : ax.tp[0];
      sel.batch = r ? r.batch : ax.batch[0];
      sel.topk = r ? r.eagle_topk : topks[0];
      sel.n = r ? r.draft_tokens : ax.draft_tokens[0];
      sel.acceptance = r ? acceptanceOf(r.accept_mode, r.accept_value) : view.acceptances[0];
      byId('explorer').setAttribute('data-start-row', r ? r.index : 'none');
      Object.keys(set).forEach((k) => set[k](sel[k]));
      drawModel();
      draw();
    }
    function draw() {
      const charts = byId('charts');
      destroyPlots(charts);
      const grid = el('div', { 'class': 'grid2' }, charts);
      const mine = rowList.filter(matches);
      const atN = mine.filter((r) => r.draft_tokens === sel.n);
      const plain = plainAt(sel);
      chartTokpsVsDraft(el('div', null, grid), sel, mine, plain);
      chartCycle(el('div', null, grid), sel, atN);
      chartAccept(el('div', null, grid), sel, atN, plain);
      const reasons = el('div', null, grid);
      const bad = atN.filter((r) => r.status !== 'ok');
      if (bad.length) {
        el('h3', null, reasons, 'Not shown at this selection');
        const ul = el('ul', null, reasons);
        bad.forEach((r) => el('li', null, ul, r.strategy + ': ' + r.reason));
      }
      const best = doc.best.find((b) => b.model === sel.model && b.topology === sel.topology &&
        b.accept_mode === sel.acceptance.mode && b.accept_value === sel.acceptance.value);
      byId('table-title').textContent = 'All results: ' + sel.model + ' on ' + sel.topology + ' (fastest first)';
      resultsTable(byId('table-host'), inOrder((r) => r.model === sel.model && r.topology === sel.topology),
        best ? best.row : null, 60);
    }
    function drawModel() {
      const host = byId('breakeven');
      destroyPlots(host);
      chartBreakeven(host, view.breakeven.find((b) => b.model === sel.model), { 'data-model': sel.model });
      waterfallSection(byId('waterfall-host'), timelines.find((t) => t.model === sel.model));
      unfitTable(byId('unfit-host'), view.unfit.filter((g) => g.model === sel.model));
      const batchHost = byId('batch-host');
      destroyPlots(batchHost);
      const grid = el('div', { 'class': 'grid2' }, batchHost);
      const mineBatch = (view.batch_charts || []).filter((c) => c.model === sel.model);
      mineBatch.filter((c) => c.best.length).forEach((c) => chartTokpsVsBatch(el('div', null, grid), c));
      const none = mineBatch.filter((c) => !c.best.length).map((c) => c.topology + ' at ' + c.acceptance);
      if (none.length) el('p', { 'class': 'note' }, batchHost, 'Nothing runs at any batch on: ' + none.join(', ') + '.');
      byId('unfit-title').textContent = 'Cannot run: ' + sel.model;
    }
    if (view.page_rows && view.page_rows.note) {
      const host = byId('table-host');
      host.parentNode.insertBefore(el('p', { 'class': 'explain', id: 'page-rows-note' }, null, view.page_rows.note), host);
    }
    const start = view.explorer.initial_row;
    selectModel(start === null ? ax.models[0] : rows[start].model, start);
    notes(doc.notes);
  }

  // ---------------------------------------------------------------- serve
  // bench_serving's labels for the summary's keys (html_serve_view.cpp lists them in its order).
  const SERVE_LABELS = {
    completed: 'Successful requests', duration: 'Benchmark duration (s)', total_input_tokens: 'Total input tokens',
    total_output_tokens: 'Total generated tokens', request_throughput: 'Request throughput (req/s)',
    input_throughput: 'Input token throughput (tok/s)', output_throughput: 'Output token throughput (tok/s)',
    total_throughput: 'Total token throughput (tok/s)', concurrency: 'Concurrency', accept_length: 'Accept length',
  };
  const serveLabel = (key) => SERVE_LABELS[key] || key.replace(/^(mean|median|p99)_(.*)_ms$/, (m, st, what) =>
    (st === 'p99' ? 'P99' : st[0].toUpperCase() + st.slice(1)) + ' ' +
    { ttft: 'TTFT', tpot: 'TPOT', itl: 'ITL', e2e_latency: 'E2E Latency' }[what] + ' (ms)');
  const configColor = (i) => PALETTE[i % PALETTE.length];

  function serveSummary(host, run) {
    const measured = run.summary.some((r) => r.measured !== undefined);
    const table = el('table', { 'class': 'data', id: 'serve-summary' }, el('div', { 'class': 'table-wrap' }, host));
    const tr = el('tr', null, el('thead', null, table));
    el('th', null, tr, '');
    run.configs.forEach((c) => el('th', { 'class': 'num' }, tr, c));
    if (measured) el('th', { 'class': 'num' }, tr, 'measured');
    const tb = el('tbody', null, table);
    run.summary.forEach((r) => {
      const row = el('tr', { 'data-key': r.key }, tb);
      el('td', null, row, serveLabel(r.key));
      const digits = ['completed', 'total_input_tokens', 'total_output_tokens'].includes(r.key) ? 0 : 2;
      r.values.forEach((v, i) => el('td', { 'class': 'num', 'data-config': run.configs[i], 'data-value': v === null ? 'none' : v },
        row, v === null ? '-' : fmt(v, digits)));
      if (measured) el('td', { 'class': 'num' }, row, r.measured === undefined ? '' : fmt(r.measured, digits));
    });
  }
  // Latency against the share of requests at or below it: one line per configuration.
  function chartLatency(host, run, d) {
    const box = chartBox(host, 'latency-' + d.key, d.title + ' (ms)', 'x: the share of requests at or below the latency.',
      { 'data-run': run.label });
    const ok = d.curves.filter((c) => c.values.length);
    if (!ok.length) return emptyChart(box, 'No request has this latency.');
    const series = [{ label: 'share', value: (u, v) => (v === null ? '' : fmt(v * 100, 1) + ' %') }];
    const data = [run.quantiles];
    const lines = [];
    ok.forEach((c) => {
      const i = run.configs.indexOf(c.label);
      series.push({ label: c.label, stroke: configColor(i), width: 2, points: { show: false } });
      data.push(c.values);
      [0.5, 0.99].forEach((q) => {
        const at = run.quantiles.findIndex((x) => x >= q - 1e-9);
        lines.push({ attrs: { 'data-series': c.label, 'data-quantile': q, 'data-value': c.values[at] },
          cells: [c.label, (q === 0.5 ? 'median' : 'P99'), fmt(c.values[at], 2) + ' ms'] });
      });
    });
    plot(box, { height: 260, series: series, scales: { x: { time: false, range: [0, 1] }, y: { range: FROM_ZERO } },
      axes: [axis({ label: 'share of requests', values: (u, v) => v.map((x) => fmt(x * 100, 0) + ' %') }),
        axis({ label: 'ms', size: 64 })] }, data, ok.length * run.quantiles.length);
    numbersTable(box, ['configuration', 'quantile', 'latency'], lines);
  }
  function chartInFlight(host, run) {
    const box = chartBox(host, 'in-flight', 'Requests in the engine', null, { 'data-run': run.label });
    const f = run.in_flight;
    const series = [{ label: 's', value: (u, v) => (v === null ? '' : fmt(v, 2) + ' s') }];
    const data = [f.times_s];
    f.curves.forEach((c) => {
      series.push({ label: c.label, stroke: configColor(run.configs.indexOf(c.label)), width: 1.5, points: { show: false } });
      data.push(c.values);
    });
    plot(box, { height: 240, series: series, scales: { x: { time: false }, y: { range: FROM_ZERO } },
      axes: [axis({ label: 'time (s)' }), axis({ label: 'requests', size: 56 })] }, data, f.curves.length * f.times_s.length);
    numbersTable(box, ['configuration', 'peak'], f.curves.map((c) => ({ attrs: { 'data-series': c.label,
      'data-value': Math.max.apply(null, c.values) }, cells: [c.label, Math.max.apply(null, c.values)] })));
  }
  function capacityTable(host, run) {
    host.innerHTML = '';
    if (!view.slo) { el('p', { 'class': 'muted' }, host, 'No SLO given (--slo).'); return; }
    el('p', { 'class': 'explain' }, host, 'The highest ' + (view.capacity_axis === 'request_rate' ? 'Poisson request rate' :
      'concurrency') + ' meeting ' + view.slo + ', and what breaks just above it.');
    const table = el('table', { 'class': 'data', id: 'capacity-table' }, host);
    const tr = el('tr', null, el('thead', null, table));
    ['configuration', view.capacity_axis === 'request_rate' ? 'max req/s' : 'max concurrency', 'output tok/s', 'mean TPOT (ms)',
      'P99 TTFT (ms)', 'above it'].forEach((h) => el('th', null, tr, h));
    const tb = el('tbody', null, table);
    run.capacity.forEach((c) => {
      const row = el('tr', { 'data-config': c.label, 'data-load': c.load === null ? 'none' : c.load }, tb);
      [c.label, c.load === null ? 'none' : fmt(c.load, 2), c.output_throughput === null ? '' : fmt(c.output_throughput, 1),
        c.mean_tpot_ms === null ? '' : fmt(c.mean_tpot_ms, 2), c.p99_ttft_ms === null ? '' : fmt(c.p99_ttft_ms, 1), c.limit]
        .forEach((v) => el('td', null, row, String(v)));
    });
  }
  function renderServe() {
    const controls = byId('controls');
    const label = el('label', null, controls, 'run');
    const select = el('select', { 'data-control': 'run' }, label);
    view.runs.forEach((r, i) => el('option', { value: i }, select, r.label));
    function draw(run) {
      ['summary-host', 'dist-host', 'flight-host'].forEach((id) => destroyPlots(byId(id)));
      el('p', { 'class': 'explain' }, byId('summary-host'), run.workload);
      serveSummary(byId('summary-host'), run);
      const grid = el('div', { 'class': 'grid2' }, byId('dist-host'));
      run.distributions.forEach((d) => chartLatency(el('div', null, grid), run, d));
      chartInFlight(byId('flight-host'), run);
      capacityTable(byId('capacity-host'), run);
    }
    select.onchange = () => draw(view.runs[Number(select.value)]);
    draw(view.runs[0]);
    const list = view.runs[0].notes.slice();
    view.skipped.forEach((s) => list.push('cannot run: ' + s));
    notes(list);
  }

  headline();
  if (view.kind === 'serve') renderServe();
  else {
    strategiesTable(byId('strategies-host'));
    if (view.kind === 'sweep') renderSweep(); else renderRun();
  }
  document.body.setAttribute('data-rendered', 'true');
})();
