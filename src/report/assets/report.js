// The HTML report's script (ES5, no dependencies): draws every chart as inline SVG from the JSON
// embedded in the page. Compiled into the binary at build time (cmake/embed_assets.cmake).
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  function byId(id) { return document.getElementById(id); }
  var doc = JSON.parse(byId('eaglesim-data').textContent);
  var tlNode = byId('eaglesim-timelines');
  var timelines = tlNode ? JSON.parse(tlNode.textContent) : [];

  // ------------------------------------------------------------------ helpers
  var STRATEGY_ORDER = ['nccl', 'oneshot', 'twoshot', 'fused', 'quant', 'ideal', 'auto'];
  var PALETTE = ['#2563eb', '#f97316', '#059669', '#9333ea', '#dc2626', '#64748b', '#ca8a04', '#0891b2', '#db2777'];
  var SEGMENTS = [
    { key: 'verify_compute_us', name: 'compute', label: 'verify: GEMMs + attention', color: '#3b82f6' },
    { key: 'verify_allreduce_us', name: 'allreduce', label: 'verify: allreduce (incl. waiting)', color: '#f97316' },
    { key: 'verify_other_us', name: 'other', label: 'verify: other (norms, elementwise, gaps)', color: '#94a3b8' },
    { key: 'draft_us', name: 'draft', label: 'draft head (N forwards)', color: '#a855f7' }
  ];
  var KIND_COLORS = {
    gemm: '#3b82f6', grouped_gemm: '#1e40af', attention: '#14b8a6', allreduce: '#f97316', rmsnorm: '#94a3b8',
    residual_add: '#cbd5e1', act: '#a8a29e', embedding: '#84cc16', lm_head: '#8b5cf6', other: '#475569'
  };
  var strategyColors = {};
  function strategyColor(name) {
    if (!(name in strategyColors)) {
      var i = STRATEGY_ORDER.indexOf(name);
      if (i < 0) i = STRATEGY_ORDER.length + Object.keys(strategyColors).length;
      strategyColors[name] = PALETTE[i % PALETTE.length];
    }
    return strategyColors[name];
  }
  function el(tag, attrs, parent, text) {
    var svgTags = { svg: 1, g: 1, rect: 1, line: 1, path: 1, circle: 1, text: 1, title: 1, polyline: 1 };
    var n = svgTags[tag] ? document.createElementNS(NS, tag) : document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) n.setAttribute(k, attrs[k]);
    if (text !== undefined) n.textContent = text;
    if (parent) parent.appendChild(n);
    return n;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    return Number(v).toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function fmtUs(us) {
    if (us === null || us === undefined) return 'n/a';
    return us >= 10000 ? fmt(us / 1000, 2) + ' ms' : fmt(us, 1) + ' µs';
  }
  function accLabel(mode, value) { return mode === 'rate' ? 'a=' + fmt(value, 2) : 'E=' + fmt(value, 2); }
  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) hi = lo + 1;
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / count)));
    var err = (hi - lo) / count / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var ticks = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Math.round(t / step) * step);
    return ticks;
  }
  function scale(d0, d1, r0, r1) { return function (v) { return r0 + (v - d0) / (d1 - d0 || 1) * (r1 - r0); }; }
  function chainTokens(a, n) { return a >= 1 ? n + 1 : (1 - Math.pow(a, n + 1)) / (1 - a); }
  function legend(host, items) {
    var div = el('div', { 'class': 'legend' }, host);
    items.forEach(function (it) {
      var s = el('span', null, div);
      el('span', { 'class': 'sw' + (it.dashed ? ' dash' : ''), style: it.dashed ? '' : 'background:' + it.color }, s);
      s.appendChild(document.createTextNode(it.label));
    });
  }
  function chartBox(host, title, note) {
    var box = el('div', { 'class': 'chart' }, host);
    el('h3', null, box, title);
    if (note) el('p', { 'class': 'note' }, box, note);
    return box;
  }
  function frame(box, name, w, h, m, attrs) {
    var a = { 'class': 'plot', viewBox: '0 0 ' + w + ' ' + h, 'data-chart': name, role: 'img' };
    for (var k in attrs || {}) a[k] = attrs[k];
    var svg = el('svg', a, box);
    return { svg: svg, x0: m.l, x1: w - m.r, y0: h - m.b, y1: m.t, w: w, h: h };
  }
  function axes(f, xs, ys, xTicks, yTicks, xLabel, yLabel, xFmt, yFmt) {
    yTicks.forEach(function (t) {
      el('line', { 'class': 'grid', x1: f.x0, x2: f.x1, y1: ys(t), y2: ys(t) }, f.svg);
      el('text', { x: f.x0 - 6, y: ys(t) + 4, 'text-anchor': 'end' }, f.svg, yFmt(t));
    });
    xTicks.forEach(function (t) {
      el('line', { 'class': 'axis', x1: xs(t), x2: xs(t), y1: f.y0, y2: f.y0 + 4 }, f.svg);
      el('text', { x: xs(t), y: f.y0 + 17, 'text-anchor': 'middle' }, f.svg, xFmt(t));
    });
    el('line', { 'class': 'axis', x1: f.x0, x2: f.x1, y1: f.y0, y2: f.y0 }, f.svg);
    el('line', { 'class': 'axis', x1: f.x0, x2: f.x0, y1: f.y0, y2: f.y1 }, f.svg);
    el('text', { 'class': 'axis-label', x: (f.x0 + f.x1) / 2, y: f.h - 6, 'text-anchor': 'middle' }, f.svg, xLabel);
    el('text', { 'class': 'axis-label', x: 14, y: (f.y0 + f.y1) / 2, 'text-anchor': 'middle',
      transform: 'rotate(-90 14 ' + (f.y0 + f.y1) / 2 + ')' }, f.svg, yLabel);
  }
  function emptyNote(box, name, text, attrs) {
    var a = { 'class': 'plot', viewBox: '0 0 640 80', 'data-chart': name, 'data-empty': 'true' };
    for (var k in attrs || {}) a[k] = attrs[k];
    var svg = el('svg', a, box);
    el('text', { x: 320, y: 44, 'text-anchor': 'middle' }, svg, text);
  }

  // ------------------------------------------------------------------ charts
  // Lines of tok/s against draft tokens, one per strategy, and plain decoding as a dashed line.
  function chartTokpsVsDraft(host, rows, sel, plain) {
    var box = chartBox(host, 'Throughput against draft tokens',
      'tok/s = expected tokens per cycle / (draft + verify time); dashed: fastest plain decoding at this TP.');
    var attrs = selectionAttrs(sel);
    var ok = rows.filter(function (r) { return r.status === 'ok'; });
    if (!ok.length) { emptyNote(box, 'tokps-vs-draft', 'No combination of this selection can run (see the table below).', attrs); return; }
    var xsVals = view.axes.draft_tokens;
    var ymax = Math.max.apply(null, ok.map(function (r) { return r.tokens_per_s; }).concat(plain ? [plain] : []));
    var f = frame(box, 'tokps-vs-draft', 640, 340, { l: 64, r: 20, t: 14, b: 44 }, attrs);
    var xs = scale(xsVals[0] - 0.3, xsVals[xsVals.length - 1] + 0.3, f.x0, f.x1);
    var yt = niceTicks(0, ymax * 1.08, 6);
    var ys = scale(0, yt[yt.length - 1], f.y0, f.y1);
    axes(f, xs, ys, xsVals, yt, 'draft tokens per cycle (N)', 'tokens / s', String, function (v) { return fmt(v, 0); });
    if (plain) {
      var gp = el('g', { 'data-series': 'plain-decode', 'data-value': plain }, f.svg);
      el('line', { x1: f.x0, x2: f.x1, y1: ys(plain), y2: ys(plain), stroke: '#334155', 'stroke-width': 1.5,
        'stroke-dasharray': '6 4' }, gp);
      el('text', { x: f.x1 - 4, y: ys(plain) - 5, 'text-anchor': 'end' }, gp, 'plain decoding ' + fmt(plain, 1) + ' tok/s');
    }
    var items = [];
    view.axes.strategies.forEach(function (s) {
      var pts = ok.filter(function (r) { return r.strategy === s; }).sort(function (a, b) { return a.draft_tokens - b.draft_tokens; });
      if (!pts.length) return;
      var color = strategyColor(s);
      var g = el('g', { 'data-series': s }, f.svg);
      el('polyline', { fill: 'none', stroke: color, 'stroke-width': isBound(s) ? 1.6 : 2.2,
        'stroke-dasharray': isBound(s) ? '3 3' : null, points: pts.map(function (r) { return xs(r.draft_tokens) + ',' + ys(r.tokens_per_s); }).join(' ') }, g);
      pts.forEach(function (r) {
        var c = el('circle', { cx: xs(r.draft_tokens), cy: ys(r.tokens_per_s), r: 3.6, fill: color,
          'data-x': r.draft_tokens, 'data-y': r.tokens_per_s, 'data-row': r.index }, g);
        el('title', null, c, s + ', N=' + r.draft_tokens + ': ' + fmt(r.tokens_per_s, 1) + ' tok/s, ' +
          fmt(r.speedup_vs_decode, 2) + '× plain decoding');
      });
      items.push({ color: color, label: s + (isBound(s) ? ' (lower bound)' : '') });
    });
    if (plain) items.push({ dashed: true, label: 'plain decoding (fastest strategy)' });
    legend(box, items);
  }

  // Stacked bars: where one cycle's time goes, per strategy.
  function chartCycle(host, rows, sel) {
    var box = chartBox(host, 'Where a cycle goes' + (sel.n !== undefined ? ' (N=' + sel.n + ')' : ''),
      'One speculative cycle = N draft-head forwards + one verify forward over N+1 tokens. Bars are stacked µs.');
    var attrs = selectionAttrs(sel);
    if (sel.n !== undefined) attrs['data-draft-tokens'] = sel.n;
    var ok = rows.filter(function (r) { return r.status === 'ok'; });
    if (!ok.length) { emptyNote(box, 'cycle-breakdown', 'No strategy can run at this selection.', attrs); return; }
    var ymax = Math.max.apply(null, ok.map(function (r) {
      return SEGMENTS.reduce(function (s, seg) { return s + (r[seg.key] || 0); }, 0);
    }));
    var f = frame(box, 'cycle-breakdown', 640, 340, { l: 70, r: 20, t: 22, b: 44 }, attrs);
    var yt = niceTicks(0, ymax * 1.1, 6);
    var ys = scale(0, yt[yt.length - 1], f.y0, f.y1);
    var slot = (f.x1 - f.x0) / ok.length;
    var xs = function (i) { return f.x0 + slot * (i + 0.5); };
    axes(f, xs, ys, [], yt, 'allreduce strategy', 'µs per cycle', String, function (v) { return fmt(v, 0); });
    ok.forEach(function (r, i) {
      var bw = Math.min(70, slot * 0.6), y = 0;
      var g = el('g', { 'data-strategy': r.strategy }, f.svg);
      SEGMENTS.forEach(function (seg) {
        var v = r[seg.key] || 0;
        var rect = el('rect', { x: xs(i) - bw / 2, y: ys(y + v), width: bw, height: Math.max(0, ys(y) - ys(y + v)),
          fill: seg.color, 'data-series': seg.name, 'data-strategy': r.strategy, 'data-value': v }, g);
        el('title', null, rect, r.strategy + ' · ' + seg.label + ': ' + fmtUs(v));
        y += v;
      });
      el('text', { 'class': 'value-label', x: xs(i), y: ys(y) - 5, 'text-anchor': 'middle' }, g, fmtUs(y));
      el('text', { x: xs(i), y: f.y0 + 16, 'text-anchor': 'middle' }, g, r.strategy);
    });
    legend(box, SEGMENTS.map(function (s) { return { color: s.color, label: s.label }; }));
  }

  // tok/s as a function of the per-position acceptance rate, from each strategy's cycle time.
  function chartAccept(host, rows, sel) {
    var box = chartBox(host, 'Throughput against acceptance rate' + (sel.n !== undefined ? ' (N=' + sel.n + ')' : ''),
      'Chain drafts: E = (1 − a^(N+1)) / (1 − a) tokens per cycle. Where a line crosses the dashed plain-decoding ' +
      'line is its break-even acceptance rate (dot).');
    var attrs = selectionAttrs(sel);
    var ok = rows.filter(function (r) { return r.status === 'ok' && r.cycle_us > 0; });
    if (!ok.length) { emptyNote(box, 'tokps-vs-accept', 'No strategy can run at this selection.', attrs); return; }
    var n = ok[0].draft_tokens;
    var plain = Math.max.apply(null, ok.map(function (r) { return r.decode_tokens_per_s || 0; }));
    var ymax = Math.max.apply(null, ok.map(function (r) { return (n + 1) * 1e6 / r.cycle_us; }).concat([plain]));
    var f = frame(box, 'tokps-vs-accept', 640, 340, { l: 64, r: 20, t: 14, b: 44 }, attrs);
    var xs = scale(0, 1, f.x0, f.x1);
    var yt = niceTicks(0, ymax * 1.05, 6);
    var ys = scale(0, yt[yt.length - 1], f.y0, f.y1);
    axes(f, xs, ys, [0, 0.2, 0.4, 0.6, 0.8, 1], yt, 'acceptance rate per draft position (a)', 'tokens / s',
      function (v) { return fmt(v, 1); }, function (v) { return fmt(v, 0); });
    view.accepts.forEach(function (a) {
      if (a.mode !== 'rate') return;
      el('line', { x1: xs(a.value), x2: xs(a.value), y1: f.y0, y2: f.y1, stroke: '#cbd5e1', 'stroke-dasharray': '2 3' }, f.svg);
      el('text', { x: xs(a.value) + 3, y: f.y1 + 10 }, f.svg, accLabel('rate', a.value));
    });
    if (plain > 0) {
      var gp = el('g', { 'data-series': 'plain-decode', 'data-value': plain }, f.svg);
      el('line', { x1: f.x0, x2: f.x1, y1: ys(plain), y2: ys(plain), stroke: '#334155', 'stroke-dasharray': '6 4', 'stroke-width': 1.5 }, gp);
    }
    var items = [];
    ok.forEach(function (r) {
      var color = strategyColor(r.strategy), pts = [];
      for (var i = 0; i <= 50; ++i) { var a = i / 50; pts.push(xs(a) + ',' + ys(chainTokens(a, n) * 1e6 / r.cycle_us)); }
      var g = el('g', { 'data-series': r.strategy, 'data-cycle-us': r.cycle_us }, f.svg);
      el('polyline', { fill: 'none', stroke: color, 'stroke-width': isBound(r.strategy) ? 1.5 : 2,
        'stroke-dasharray': isBound(r.strategy) ? '3 3' : null, points: pts.join(' ') }, g);
      var be = r.breakeven_accept_rate;
      if (be !== null && be !== undefined && r.decode_tokens_per_s) {
        var c = el('circle', { cx: xs(be), cy: ys(chainTokens(be, n) * 1e6 / r.cycle_us), r: 4, fill: '#fff', stroke: color,
          'stroke-width': 2, 'data-breakeven': be }, g);
        el('title', null, c, r.strategy + ': break-even at a=' + fmt(be, 3));
      }
      items.push({ color: color, label: r.strategy + (isBound(r.strategy) ? ' (lower bound)' : '') });
    });
    items.push({ dashed: true, label: 'plain decoding' });
    legend(box, items);
  }

  // Horizontal bars: the lowest acceptance rate at which EAGLE-3 beats plain decoding.
  function chartBreakeven(host, cats, title, note, attrs) {
    var box = chartBox(host, title, note);
    var h = 40 + cats.length * 34 + 30;
    var f = frame(box, 'breakeven', 1300, h, { l: 230, r: 260, t: 16, b: 40 }, attrs);
    var xs = scale(0, 1, f.x0, f.x1);
    var xt = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1];
    xt.forEach(function (t) { el('line', { 'class': 'grid', x1: xs(t), x2: xs(t), y1: f.y1, y2: f.y0 }, f.svg); });
    axes(f, xs, scale(0, 1, f.y0, f.y1), xt, [], 'break-even acceptance rate per draft position (lower is better)', '',
      function (v) { return fmt(v, 1); }, String);
    view.accepts.forEach(function (a) {
      if (a.mode !== 'rate') return;
      el('line', { x1: xs(a.value), x2: xs(a.value), y1: f.y1 - 6, y2: f.y0, stroke: '#0f172a', 'stroke-dasharray': '4 3' }, f.svg);
      el('text', { x: xs(a.value), y: f.y1 - 8, 'text-anchor': 'middle', 'class': 'value-label' }, f.svg, 'swept ' + accLabel('rate', a.value));
    });
    cats.forEach(function (c, i) {
      var y = f.y1 + 8 + i * 34;
      el('text', { x: f.x0 - 8, y: y + 17, 'text-anchor': 'end', 'class': 'value-label' }, f.svg, c.label);
      var g = el('g', { 'data-series': 'breakeven', 'data-category': c.label,
        'data-value': c.value === null ? 'none' : c.value, 'data-state': c.state }, f.svg);
      if (c.state === 'ok') {
        var good = view.accepts.some(function (a) { return a.mode === 'rate' && a.value > c.value; });
        el('rect', { x: f.x0, y: y + 4, width: Math.max(1, xs(c.value) - f.x0), height: 22, rx: 3,
          fill: good ? '#10b981' : '#f59e0b' }, g);
        el('text', { x: xs(c.value) + 6, y: y + 19 }, g, 'a=' + fmt(c.value, 3) + ' · ' + c.detail);
      } else {
        el('rect', { x: f.x0, y: y + 4, width: f.x1 - f.x0, height: 22, rx: 3, fill: c.state === 'never' ? '#fee2e2' : '#f1f5f9' }, g);
        el('text', { x: f.x0 + 8, y: y + 19 }, g, c.detail);
      }
    });
    legend(box, [{ color: '#10b981', label: 'pays off at a swept acceptance rate' },
      { color: '#f59e0b', label: 'needs a higher acceptance than swept' },
      { color: '#fca5a5', label: 'never pays off (not even at a=1)' }]);
  }

  // One verify step per rank: every op as a bar on its rank's row.
  function chartWaterfall(host, tl, name, t0, t1, title) {
    var box = chartBox(host, title, null);
    var rowH = 24, top = 10, left = 70;
    var h = top + tl.ranks * rowH + 50;
    var f = frame(box, name, 1300, h, { l: left, r: 20, t: top, b: 50 },
      { 'data-model': tl.model || '', 'data-label': tl.label, 'data-ranks': tl.ranks });
    var xs = scale(t0, t1, f.x0, f.x1);
    var xt = niceTicks(t0, t1, 10).filter(function (t) { return t >= t0 && t <= t1; });
    f.y0 = top + tl.ranks * rowH;
    axes(f, xs, scale(0, 1, f.y0, f.y1), xt, [], 'time since the step started (µs)', '',
      function (v) { return fmt(v, 0); }, String);
    var groups = {};
    function group(kind) {
      if (!groups[kind]) groups[kind] = el('g', { 'data-series': kind }, f.svg);
      return groups[kind];
    }
    for (var r = 0; r < tl.ranks; ++r)
      el('text', { x: f.x0 - 8, y: top + r * rowH + 16, 'text-anchor': 'end' }, f.svg, 'rank ' + r);
    var drawn = 0;
    tl.spans.forEach(function (s) {
      var rank = s[0], kind = tl.kinds[s[1]], start = s[2], end = s[3], wait = s[4];
      if (end < t0 || start > t1) return;
      var x = xs(Math.max(start, t0)), w = Math.max(0.6, xs(Math.min(end, t1)) - x);
      var g = group(kind);
      var rect = el('rect', { 'class': 'span', x: x, y: top + rank * rowH + 3, width: w, height: rowH - 6,
        fill: KIND_COLORS[kind] || '#475569', 'data-rank': rank, 'data-start': start, 'data-end': end }, g);
      el('title', null, rect, tl.names[s[6]] + ' (' + kind + (s[5] >= 0 ? ', layer ' + s[5] : '') + '): ' +
        fmt(end - start, 2) + ' µs' + (wait > 0 ? ', waited ' + fmt(wait, 2) + ' µs' : ''));
      if (wait > 0 && kind === 'allreduce') {
        el('rect', { 'class': 'wait', x: x, y: top + rank * rowH + 3, width: Math.max(0.3, xs(Math.min(start + wait, t1)) - x),
          height: rowH - 6, fill: '#fed7aa' }, g);
      }
      drawn++;
    });
    f.svg.setAttribute('data-spans', drawn);
    legend(box, tl.kinds.filter(function (k) { return groups[k]; }).map(function (k) {
      return { color: KIND_COLORS[k] || '#475569', label: k };
    }).concat([{ color: '#fed7aa', label: 'allreduce: waiting for the slowest rank' }]));
  }

  function waterfallSection(host, tl, caption) {
    host.innerHTML = '';
    if (!tl) { el('p', { 'class': 'muted' }, host, 'No timeline for this selection.'); return; }
    el('p', { 'class': 'explain' }, host, caption);
    var end = Math.max.apply(null, tl.spans.map(function (s) { return s[3]; }));
    chartWaterfall(host, tl, 'waterfall', 0, end, 'Whole verify step');
    // Zoom: the first two decoder layers, where individual ops are wide enough to see.
    var layers = tl.spans.map(function (s) { return s[5]; }).filter(function (l) { return l >= 0; });
    if (layers.length) {
      var first = Math.min.apply(null, layers);
      var zoomEnd = Math.max.apply(null, tl.spans.filter(function (s) { return s[5] >= 0 && s[5] <= first + 1; })
        .map(function (s) { return s[3]; }));
      chartWaterfall(host, tl, 'waterfall-zoom', 0, zoomEnd, 'Zoom: up to the end of decoder layer ' + (first + 1));
    }
  }

  // ------------------------------------------------------------------ tables
  var COLUMNS = [
    { key: 'topology', label: 'topology' }, { key: 'weight_dtype', label: 'dtype' }, { key: 'tp', label: 'TP', num: 1 },
    { key: 'draft_tokens', label: 'N', num: 1 }, { key: 'accept', label: 'accept' }, { key: 'strategy', label: 'strategy' },
    { key: 'tokens_per_s', label: 'tok/s', num: 1, d: 1 }, { key: 'decode_tokens_per_s', label: 'plain tok/s', num: 1, d: 1 },
    { key: 'speedup_vs_decode', label: 'speedup', num: 1, d: 2, suffix: '×' },
    { key: 'verify_us', label: 'verify µs', num: 1, d: 1 }, { key: 'verify_allreduce_us', label: 'allreduce µs', num: 1, d: 1 },
    { key: 'allreduce_count', label: '#AR', num: 1, d: 0 }, { key: 'draft_us', label: 'draft µs', num: 1, d: 1 },
    { key: 'cycle_us', label: 'cycle µs', num: 1, d: 1 }, { key: 'tokens_per_cycle', label: 'E tok/cycle', num: 1, d: 2 },
    { key: 'breakeven_accept_rate', label: 'break-even a', num: 1, d: 3 }, { key: 'mem_need_gb', label: 'GB/GPU', num: 1, d: 1 }
  ];
  function resultsTable(host, rows, bestIndex, limit) {
    host.innerHTML = '';
    var ok = rows.filter(function (r) { return r.status === 'ok'; })
      .sort(function (a, b) { return b.tokens_per_s - a.tokens_per_s || a.index - b.index; });
    var wrap = el('div', { 'class': 'table-wrap' }, host);
    var table = el('table', { 'class': 'data', id: 'results-table', 'data-rows': ok.length }, wrap);
    var tr = el('tr', null, el('thead', null, table));
    // A run has one trace: no weight dtype or memory columns to show.
    var columns = COLUMNS.filter(function (c) { return view.kind === 'sweep' || (c.key !== 'weight_dtype' && c.key !== 'mem_need_gb'); });
    columns.forEach(function (c) { el('th', { 'class': c.num ? 'num' : '' }, tr, c.label); });
    var tbody = el('tbody', null, table);
    ok.slice(0, limit).forEach(function (r) {
      var row = el('tr', { 'data-index': r.index, 'class': r.index === bestIndex ? 'best' : '' }, tbody);
      columns.forEach(function (c) {
        var v = c.key === 'accept' ? accLabel(r.accept_mode, r.accept_value) : r[c.key];
        var text = c.num && c.d !== undefined ? fmt(v, c.d) + (c.suffix && v !== null ? c.suffix : '') : String(v === undefined || v === null ? '' : v);
        el('td', { 'class': c.num ? 'num' : '', 'data-key': c.key, 'data-value': v === null || v === undefined ? '' : v }, row, text);
      });
    });
    if (ok.length > limit) {
      var b = el('button', { 'class': 'more' }, host, 'Show all ' + ok.length + ' rows');
      b.onclick = function () { resultsTable(host, rows, bestIndex, ok.length); };
    }
    if (!ok.length) el('p', { 'class': 'muted' }, host, 'Nothing in this selection can run.');
  }
  function unfitTable(host, rows) {
    host.innerHTML = '';
    var groups = [], byReason = {};
    rows.forEach(function (r) {
      if (r.status === 'ok') return;
      var g = byReason[r.reason];
      if (!g) { g = byReason[r.reason] = { reason: r.reason, status: r.status, count: 0, topo: {}, tp: {}, strat: {} }; groups.push(g); }
      g.count++; g.topo[r.topology] = 1; g.tp[r.tp] = 1; g.strat[r.strategy] = 1;
    });
    if (!groups.length) { el('p', { 'class': 'muted' }, host, 'Every combination of this model can run.'); return; }
    var wrap = el('div', { 'class': 'table-wrap' }, host);
    var table = el('table', { 'class': 'data', id: 'unfit-table' }, wrap);
    var tr = el('tr', null, el('thead', null, table));
    ['why', 'reason', 'topologies', 'TP', 'strategies', 'combinations'].forEach(function (h) { el('th', null, tr, h); });
    var tb = el('tbody', null, table);
    groups.forEach(function (g) {
      var row = el('tr', { 'data-status': g.status }, tb);
      el('td', null, row, g.status.replace(/_/g, ' '));
      el('td', { 'class': 'reason' }, row, g.reason);
      el('td', null, row, Object.keys(g.topo).join(', '));
      el('td', null, row, Object.keys(g.tp).join(', '));
      el('td', null, row, Object.keys(g.strat).join(', '));
      el('td', { 'class': 'num' }, row, String(g.count));
    });
  }

  // ------------------------------------------------------------------ views
  function selectionAttrs(sel) {
    return { 'data-model': sel.model, 'data-topology': sel.topology, 'data-weight-dtype': sel.dtype, 'data-tp': sel.tp,
      'data-accept-mode': sel.acc.mode, 'data-accept-value': sel.acc.value };
  }
  function splitVerify(r) {
    // Same rule as the sweep's CSV: GEMMs + attention, allreduce, and the remainder as "other".
    var k = r.verify_kind_us || {};
    var mm = ['gemm', 'grouped_gemm', 'attention', 'lm_head'].reduce(function (s, n) { return s + (k[n] || 0); }, 0);
    var compute = Math.min(mm, r.verify_us - r.comm_us);
    return { verify_compute_us: compute, verify_allreduce_us: r.comm_us, verify_other_us: Math.max(0, r.verify_us - r.comm_us - compute) };
  }
  function fromRun(d) {
    var sc = d.scenario;
    var rows = d.results.map(function (r, i) {
      var row = { index: i, model: sc.model, topology: sc.topology, tp: sc.tp, draft_tokens: sc.draft_tokens,
        weight_dtype: '', accept_mode: sc.acceptance.mode, accept_value: sc.acceptance.value, strategy: r.strategy,
        status: r.supported ? 'ok' : 'strategy', reason: r.reason || '' };
      if (r.supported) {
        var s = splitVerify(r);
        for (var k in s) row[k] = s[k];
        ['verify_us', 'allreduce_count', 'allreduce_mean_us', 'draft_us', 'decode_us', 'cycle_us', 'tokens_per_cycle',
          'tokens_per_s', 'decode_tokens_per_s', 'speedup_vs_decode', 'breakeven_accept_rate', 'breakeven_accept_len']
          .forEach(function (f) { row[f] = r[f]; });
      }
      return row;
    });
    return { kind: 'run', rows: rows, accepts: [sc.acceptance],
      axes: { draft_tokens: [sc.draft_tokens], strategies: d.results.map(function (r) { return r.strategy; }) } };
  }
  function fromSweep(d) {
    return { kind: 'sweep', rows: d.rows, accepts: d.axes.acceptance, axes: d.axes };
  }
  var view = doc.format === 'eaglesim-sweep' ? fromSweep(doc) : fromRun(doc);
  // Lower bounds (zero-cost allreduce) are drawn, dashed, but never named the winner.
  var LOWER_BOUNDS = doc.axes && doc.axes.best_excludes ? doc.axes.best_excludes : ['ideal'];
  function isBound(s) { return LOWER_BOUNDS.indexOf(s) >= 0; }

  function verdictCard(host, cls, model, big, detail, bullets) {
    var c = el('div', { 'class': 'verdict ' + cls, 'data-verdict': cls }, host);
    el('div', { 'class': 'model' }, c, model);
    el('div', { 'class': 'big' }, c, big);
    var dd = el('div', { 'class': 'detail' }, c);
    dd.innerHTML = detail;
    if (bullets && bullets.length) {
      var ul = el('ul', null, c);
      bullets.forEach(function (b) { el('li', null, ul, b); });
    }
  }
  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; }); }

  function renderRun() {
    var sc = doc.scenario;
    byId('title').textContent = 'eaglesim run — ' + sc.model + ' on ' + sc.topology;
    byId('subtitle').textContent = 'TP ' + sc.tp + ' · ' + sc.draft_tokens + ' draft tokens · ' +
      sc.acceptance.description + ' · backend ' + sc.backend + (sc.trace ? ' · trace ' + sc.trace : '');
    var head = byId('headline');
    var ok = view.rows.filter(function (r) { return r.status === 'ok'; });
    var real = ok.filter(function (r) { return !isBound(r.strategy); });
    var best = (real.length ? real : ok).slice().sort(function (a, b) { return b.tokens_per_s - a.tokens_per_s; })[0];
    if (!best) verdictCard(head, 'none', sc.model, 'No strategy can run', 'See the table for the reasons.');
    else {
      var ref = real.length ? real[0] : ok[0];
      var pays = best.speedup_vs_decode > 1;
      var known = best.decode_us !== null && best.decode_us !== undefined;
      verdictCard(head, !known ? 'none' : pays ? 'good' : 'bad', sc.model + ' · ' + sc.topology + ' · TP ' + sc.tp,
        !known ? 'Best strategy: ' + best.strategy : (pays ? 'EAGLE-3 pays off: ' : 'EAGLE-3 does not pay off: ') +
          fmt(best.speedup_vs_decode, 2) + '× plain decoding',
        'Best strategy <b>' + esc(best.strategy) + '</b>: <b>' + fmt(best.tokens_per_s, 1) + ' tok/s</b> against ' +
          fmt(best.decode_tokens_per_s, 1) + ' tok/s plain decoding (cycle ' + fmtUs(best.cycle_us) + ', ' +
          fmt(best.tokens_per_cycle, 2) + ' tokens per cycle).',
        [ref && ref !== best ? best.strategy + ' is ' + fmt(best.tokens_per_s / ref.tokens_per_s, 2) + '× the reference ' + ref.strategy : null,
          best.breakeven_accept_rate !== null && best.breakeven_accept_rate !== undefined ?
            'Break-even acceptance rate: a=' + fmt(best.breakeven_accept_rate, 3) + ' (' + sc.acceptance.description + ')' :
            'No acceptance rate makes EAGLE-3 pay off with this strategy',
          'Allreduce share of the verify step: ' + fmt(100 * best.verify_allreduce_us / best.verify_us, 0) + '% (' +
            best.allreduce_count + ' allreduces)'].filter(Boolean));
    }
    var sel = { model: sc.model, topology: sc.topology, dtype: '', tp: sc.tp, acc: sc.acceptance, n: sc.draft_tokens };
    var charts = byId('charts');
    charts.innerHTML = '';
    var g = el('div', { 'class': 'grid2' }, charts);
    chartCycle(el('div', null, g), view.rows, sel);
    chartAccept(el('div', null, g), view.rows, sel);
    byId('explorer-title').textContent = 'Strategies compared';
    byId('explorer-explain').textContent = 'The same trace under every strategy: where each cycle goes, and how ' +
      'throughput depends on the acceptance rate.';
    byId('controls').style.display = 'none';
    chartBreakeven(byId('breakeven'), view.rows.map(function (r) {
      if (r.status !== 'ok') return { label: r.strategy, value: null, state: 'unfit', detail: 'cannot run: ' + r.reason };
      var be = r.breakeven_accept_rate;
      if (be === null || be === undefined) return { label: r.strategy, value: null, state: 'never', detail: 'never pays off' };
      return { label: r.strategy, value: be, state: 'ok', detail: fmt(r.speedup_vs_decode, 2) + '× at ' + accLabel(sc.acceptance.mode, sc.acceptance.value) };
    }), 'Break-even acceptance per strategy', 'The per-position acceptance rate below which plain decoding is faster.',
      { 'data-topology': sc.topology });
    var wfHost = byId('waterfall-host'), wfSel = byId('waterfall-select');
    function showWf() {
      var tl = timelines[Number(wfSel.value)];
      waterfallSection(wfHost, tl, tl ? 'Strategy ' + tl.label + ': one verify step, every op on every rank.' : '');
    }
    timelines.forEach(function (t, i) { el('option', { value: i }, wfSel, t.label); });
    wfSel.onchange = showWf;
    var bi = best ? timelines.findIndex(function (t) { return t.label === best.strategy; }) : -1;
    if (bi >= 0) wfSel.value = bi;
    showWf();
    resultsTable(byId('table-host'), view.rows, best ? best.index : -1, 1000);
    unfitTable(byId('unfit-host'), view.rows);
    byId('best-section').style.display = 'none';
    var notes = byId('notes');
    (sc.notes || []).forEach(function (n) { el('li', null, notes, n); });
  }

  function renderSweep() {
    var ax = doc.axes;
    byId('title').textContent = 'eaglesim sweep — ' + ax.models.join(', ');
    byId('subtitle').textContent = ax.topologies.length + ' topologies · TP ' + ax.tp.join(',') + ' · draft tokens ' +
      ax.draft_tokens.join(',') + ' · ' + ax.acceptance.map(function (a) { return accLabel(a.mode, a.value); }).join(', ') +
      ' · strategies ' + ax.strategies.join(', ') + ' · weights ' + ax.weight_dtypes.join(',') + ' · KV ' + ax.kv_len +
      ' tokens · ' + doc.counts.combinations + ' combinations, ' + doc.counts.ok + ' can run';
    var rows = doc.rows;
    var key = function (r) {
      return [r.model, r.topology, r.weight_dtype, r.tp, r.draft_tokens, r.strategy, r.accept_mode, r.accept_value].join('|');
    };
    var index = {};
    rows.forEach(function (r) { index[key(r)] = r; });

    // Headline: per model, its best topology at the most optimistic acceptance swept, plus one
    // line per acceptance; above the cards, which strategy wins most often.
    var head = byId('headline');
    var wins = {}, pairs = 0, paysAt = ax.acceptance.map(function () { return 0; });
    doc.best.forEach(function (b) {
      if (b.row === null) return;
      var ai = ax.acceptance.findIndex(function (a) { return a.mode === b.accept_mode && a.value === b.accept_value; });
      if (ai === ax.acceptance.length - 1) { wins[b.strategy] = (wins[b.strategy] || 0) + 1; pairs++; }
      if (b.eagle3_pays_off) paysAt[ai]++;
    });
    var winner = Object.keys(wins).sort(function (a, b) { return wins[b] - wins[a] || (a < b ? -1 : 1); })[0];
    var summary = el('p', { 'class': 'summary-line', id: 'summary' }, head);
    summary.innerHTML = pairs ? 'Winning allreduce strategy: <b>' + esc(winner) + '</b> (best in ' + wins[winner] + ' of ' +
      pairs + ' model × topology pairs that can run, at ' + accLabel(ax.acceptance[ax.acceptance.length - 1].mode,
      ax.acceptance[ax.acceptance.length - 1].value) + '). EAGLE-3 beats the fastest plain decoding in ' +
      ax.acceptance.map(function (a, i) { return paysAt[i] + ' of ' + pairs + ' pairs at ' + accLabel(a.mode, a.value); }).join(', ') + '.'
      : 'Nothing in this sweep can run: see “Cannot run” below.';
    var cards = el('div', { 'class': 'headline' }, head);
    ax.models.forEach(function (m) {
      var mine = doc.best.filter(function (b) { return b.model === m && b.row !== null; });
      if (!mine.length) { verdictCard(cards, 'none', m, 'Does not fit anywhere', 'No topology in the sweep can run this model; see “Cannot run”.'); return; }
      var lastAcc = ax.acceptance[ax.acceptance.length - 1];
      var atLast = mine.filter(function (b) { return b.accept_mode === lastAcc.mode && b.accept_value === lastAcc.value; });
      // The verdict takes the topology where EAGLE-3 gains most; the detail names the fastest one.
      var gain = atLast.slice().sort(function (a, b) { return (b.speedup_vs_best_plain || 0) - (a.speedup_vs_best_plain || 0); })[0];
      var top = atLast.slice().sort(function (a, b) { return b.tokens_per_s - a.tokens_per_s; })[0];
      var pays = gain.eagle3_pays_off;
      var r = rows[top.row];
      verdictCard(cards, pays === null ? 'none' : pays ? 'good' : 'bad', m + (doc.axes.draft_models[ax.models.indexOf(m)] ? ' + ' + doc.axes.draft_models[ax.models.indexOf(m)] : ''),
        pays === null ? 'Best: ' + fmt(r.tokens_per_s, 1) + ' tok/s' : (pays ? 'EAGLE-3 pays off: up to ' : 'EAGLE-3 does not pay off: at best ') +
          fmt(gain.speedup_vs_best_plain, 2) + '× plain decoding' + (pays ? ' (' + gain.topology + ')' : ''),
        'Fastest at ' + accLabel(lastAcc.mode, lastAcc.value) + ': <b>' + esc(top.topology) + '</b>, <b>' + esc(r.strategy) + '</b>, TP ' + r.tp +
          ', N=' + r.draft_tokens + ', ' + esc(r.weight_dtype) + ' weights → <b>' + fmt(r.tokens_per_s, 1) + ' tok/s</b> against ' +
          fmt(top.best_plain_tokens_per_s, 1) + ' tok/s for the fastest plain decoding there.',
        ax.acceptance.map(function (a) {
          var at = mine.filter(function (b) { return b.accept_mode === a.mode && b.accept_value === a.value; });
          var n = at.filter(function (b) { return b.eagle3_pays_off; }).length;
          var bb = at.slice().sort(function (x, y) { return (y.speedup_vs_best_plain || 0) - (x.speedup_vs_best_plain || 0); })[0];
          return accLabel(a.mode, a.value) + ': pays off on ' + n + ' of ' + at.length + ' topologies' +
            (bb ? '; best ' + fmt(bb.speedup_vs_best_plain, 2) + '× (' + bb.strategy + ' on ' + bb.topology + ', TP ' + bb.tp + ', N=' + bb.draft_tokens + ')' : '');
        }));
    });

    // Best per (model, topology) table.
    var bt = el('table', { 'class': 'data', id: 'best-table' }, el('div', { 'class': 'table-wrap' }, byId('best-host')));
    var htr = el('tr', null, el('thead', null, bt));
    ['model', 'topology', 'accept', 'strategy', 'TP', 'N', 'dtype', 'tok/s', 'best plain tok/s', 'speedup', 'EAGLE-3']
      .forEach(function (h, i) { el('th', { 'class': i >= 4 && i !== 6 && i !== 10 ? 'num' : '' }, htr, h); });
    var btb = el('tbody', null, bt);
    doc.best.forEach(function (b) {
      var tr = el('tr', { 'data-model': b.model, 'data-topology': b.topology }, btb);
      var cells = b.row === null ? [b.model, b.topology, accLabel(b.accept_mode, b.accept_value), 'nothing fits', '', '', '', '', '', '', '']
        : [b.model, b.topology, accLabel(b.accept_mode, b.accept_value), b.strategy, b.tp, b.draft_tokens, b.weight_dtype,
          fmt(b.tokens_per_s, 1), fmt(b.best_plain_tokens_per_s, 1), b.speedup_vs_best_plain === null ? 'n/a' : fmt(b.speedup_vs_best_plain, 2) + '×', ''];
      cells.forEach(function (c, i) {
        var td = el('td', { 'class': i >= 4 && i !== 6 && i !== 10 ? 'num' : '' }, tr, String(c));
        if (i === 10 && b.row !== null && b.eagle3_pays_off !== null)
          el('span', { 'class': 'pill ' + (b.eagle3_pays_off ? 'good' : 'bad') }, td, b.eagle3_pays_off ? 'pays off' : 'does not pay off');
      });
    });

    // Explorer.
    var sel = {};
    var controls = byId('controls');
    function addSelect(label, values, fmtv, onchange) {
      var l = el('label', null, controls, label);
      var s = el('select', { 'data-control': label }, l);
      values.forEach(function (v, i) { el('option', { value: i }, s, fmtv(v)); });
      s.onchange = function () { onchange(values[Number(s.value)]); };
      return { node: s, set: function (v) { var i = values.indexOf(v); if (i >= 0) s.value = i; } };
    }
    var ctl = {
      model: addSelect('model', ax.models, String, function (v) { selectModel(v); }),
      topology: addSelect('topology', ax.topologies, String, function (v) { sel.topology = v; draw(); }),
      dtype: addSelect('weights', ax.weight_dtypes, String, function (v) { sel.dtype = v; draw(); }),
      tp: addSelect('TP', ax.tp, String, function (v) { sel.tp = v; draw(); }),
      n: addSelect('draft tokens (bars)', ax.draft_tokens, String, function (v) { sel.n = v; draw(); }),
      acc: addSelect('acceptance', ax.acceptance, function (a) { return accLabel(a.mode, a.value); }, function (v) { sel.acc = v; draw(); })
    };
    function selectModel(m) {
      sel.model = m;
      // Start from the model's fastest configuration (the waterfall's), else its first row.
      var wf = timelines.filter(function (t) { return t.model === m; })[0];
      var r = wf ? rows[wf.row] : rows.filter(function (x) { return x.model === m; })[0];
      sel.topology = r.topology; sel.dtype = r.weight_dtype; sel.tp = r.tp; sel.n = r.draft_tokens;
      sel.acc = ax.acceptance.filter(function (a) { return a.mode === r.accept_mode && a.value === r.accept_value; })[0];
      ['model', 'topology', 'dtype', 'tp', 'n', 'acc'].forEach(function (k) { ctl[k].set(sel[k]); });
      drawModel();
      draw();
    }
    function rowsAt(n) {
      var out = [];
      ax.strategies.forEach(function (s) {
        var r = index[[sel.model, sel.topology, sel.dtype, sel.tp, n, s, sel.acc.mode, sel.acc.value].join('|')];
        if (r) out.push(r);
      });
      return out;
    }
    function draw() {
      var charts = byId('charts');
      charts.innerHTML = '';
      var g = el('div', { 'class': 'grid2' }, charts);
      var all = [];
      ax.draft_tokens.forEach(function (n) { all = all.concat(rowsAt(n)); });
      var plainVals = all.filter(function (r) { return r.status === 'ok' && r.decode_tokens_per_s; }).map(function (r) { return r.decode_tokens_per_s; });
      chartTokpsVsDraft(el('div', null, g), all, sel, plainVals.length ? Math.max.apply(null, plainVals) : null);
      var atN = rowsAt(sel.n);
      var s2 = {}; for (var k in sel) s2[k] = sel[k];
      chartCycle(el('div', null, g), atN, s2);
      chartAccept(el('div', null, g), atN, s2);
      var reasons = el('div', null, g);
      var bad = atN.filter(function (r) { return r.status !== 'ok'; });
      if (bad.length) {
        el('h3', null, reasons, 'Not shown at this selection');
        var ul = el('ul', null, reasons);
        bad.forEach(function (r) { el('li', null, ul, r.strategy + ': ' + r.reason); });
      }
      var mt = rows.filter(function (r) { return r.model === sel.model && r.topology === sel.topology; });
      var best = doc.best.filter(function (b) { return b.model === sel.model && b.topology === sel.topology && b.accept_mode === sel.acc.mode && b.accept_value === sel.acc.value; })[0];
      byId('table-title').textContent = 'All results: ' + sel.model + ' on ' + sel.topology + ' (fastest first)';
      resultsTable(byId('table-host'), mt, best && best.row !== null ? best.row : -1, 60);
    }
    function drawModel() {
      // Break-even per topology: the lowest over every configuration that can run there.
      var bh = byId('breakeven');
      bh.innerHTML = '';
      var cats = ax.topologies.map(function (t) {
        var mine = rows.filter(function (r) { return r.model === sel.model && r.topology === t && r.status === 'ok'; });
        if (!mine.length) return { label: t, value: null, state: 'unfit', detail: 'cannot run this model (see “Cannot run”)' };
        var withBe = mine.filter(function (r) { return r.breakeven_accept_rate !== null; });
        if (!withBe.length) return { label: t, value: null, state: 'never', detail: 'never pays off, whatever the acceptance' };
        var b = withBe.reduce(function (x, y) { return y.breakeven_accept_rate < x.breakeven_accept_rate ? y : x; });
        return { label: t, value: b.breakeven_accept_rate, state: 'ok', detail: b.strategy + ', TP ' + b.tp + ', N=' + b.draft_tokens + ', ' + b.weight_dtype };
      });
      chartBreakeven(bh, cats, 'Break-even acceptance per topology: ' + sel.model,
        'The lowest per-position acceptance rate at which EAGLE-3 beats plain decoding (same TP and strategy), over every ' +
        'configuration that fits. A bar left of a swept rate means EAGLE-3 pays off there.', { 'data-model': sel.model });
      var tl = timelines.filter(function (t) { return t.model === sel.model; })[0];
      var r = tl ? rows[tl.row] : null;
      waterfallSection(byId('waterfall-host'), tl, r ? 'Fastest configuration of ' + sel.model + ': ' + r.topology + ', ' +
        r.strategy + ', TP ' + r.tp + ', N=' + r.draft_tokens + ', ' + r.weight_dtype + ' — one verify step (' +
        fmtUs(r.verify_us) + '), every op on every rank.' : '');
      byId('waterfall-controls').style.display = 'none';
      unfitTable(byId('unfit-host'), rows.filter(function (x) { return x.model === sel.model; }));
      byId('unfit-title').textContent = 'Cannot run: ' + sel.model;
    }
    selectModel(ax.models[0]);
    var notes = byId('notes');
    (doc.notes || []).forEach(function (n) { el('li', null, notes, n); });
  }

  if (view.kind === 'sweep') renderSweep(); else renderRun();
  document.body.setAttribute('data-rendered', 'true');
})();
