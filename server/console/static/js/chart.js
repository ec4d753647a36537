// A bar chart per UTC day as SVG: one bar per series and day, an optional
// limit line. Every bar carries data-date, data-series and data-value and
// a <title> (read by screen readers and shown on hover); pages also give
// the same numbers as a table.
import {h, s} from './dom.js';

let ids = 0;

// niceStep is a tick step of 1, 2 or 5 × 10^k giving at most 5 ticks.
function niceStep(max) {
  const raw = max / 5;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return Math.max(1, m * pow);
  return 10 * pow;
}

// barChart draws days (YYYY-MM-DD) × series ({key, name, cls, values}),
// width pixels wide; limit {value, label} draws a dashed line.
export function barChart({title, desc, days, series, limit, width}) {
  const W = Math.max(300, Math.floor(width || 720));
  const H = 240;
  const m = {left: 40, right: 12, top: 20, bottom: 30};
  const plotW = W - m.left - m.right;
  const plotH = H - m.top - m.bottom;
  const values = series.flatMap((x) => x.values);
  const top = Math.max(1, limit ? limit.value : 0, ...values);
  const step = niceStep(top);
  const yMax = Math.ceil(top / step) * step;
  const y = (v) => m.top + plotH - (v / yMax) * plotH;
  const slot = plotW / days.length;
  const barW = Math.max(1, (slot * 0.8) / series.length);
  const id = `chart-${++ids}`;

  const svg = s('svg', {
    class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-labelledby': `${id}-title ${id}-desc`,
  }, s('title', {id: `${id}-title`}, title), s('desc', {id: `${id}-desc`}, desc));

  for (let v = 0; v <= yMax; v += step) {
    svg.append(
      s('line', {class: 'grid', x1: m.left, x2: W - m.right, y1: y(v), y2: y(v)}),
      s('text', {class: 'tick', x: m.left - 6, y: y(v) + 4, 'text-anchor': 'end'}, String(v)));
  }
  const every = Math.max(1, Math.ceil(days.length / Math.max(1, Math.floor(plotW / 48))));
  days.forEach((day, i) => {
    const x0 = m.left + i * slot + slot * 0.1;
    series.forEach((ser, j) => {
      const v = ser.values[i] || 0;
      svg.append(s('rect', {
        class: `bar ${ser.cls}`, x: x0 + j * barW, y: y(v), width: Math.max(1, barW - 1), height: y(0) - y(v),
        dataset: {date: day, series: ser.key, value: v},
      }, s('title', {}, `${day}: ${ser.name} ${v}`)));
    });
    if ((days.length - 1 - i) % every === 0) {
      svg.append(s('text', {class: 'tick', x: m.left + (i + 0.5) * slot, y: H - m.bottom + 16, 'text-anchor': 'middle'},
        day.slice(5)));
    }
  });
  svg.append(s('line', {class: 'axis', x1: m.left, x2: W - m.right, y1: y(0), y2: y(0)}));
  if (limit) {
    svg.append(
      s('line', {class: 'limit', x1: m.left, x2: W - m.right, y1: y(limit.value), y2: y(limit.value)}),
      s('text', {class: 'limit-label', x: W - m.right, y: y(limit.value) - 5, 'text-anchor': 'end'}, limit.label));
  }
  return svg;
}

// legend names the series (and the limit line) under a chart.
export function legend(series, limit) {
  return h('ul', {class: 'legend'},
    series.map((x) => h('li', {}, h('span', {class: `swatch ${x.cls}`, 'aria-hidden': 'true'}), x.name)),
    limit ? h('li', {}, h('span', {class: 'swatch limit', 'aria-hidden': 'true'}), limit.label) : null);
}

// lastDays is the UTC dates of the n days up to and including today.
export function lastDays(n, now = new Date()) {
  const out = [];
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  for (let i = n - 1; i >= 0; i--) out.push(new Date(today - i * 86400000).toISOString().slice(0, 10));
  return out;
}

// onWidth calls draw(width) now and again when the window is resized;
// the returned function stops it.
export function onWidth(el, draw) {
  let frame = 0;
  const redraw = () => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => draw(el.clientWidth));
  };
  window.addEventListener('resize', redraw);
  draw(el.clientWidth);
  return () => {
    cancelAnimationFrame(frame);
    window.removeEventListener('resize', redraw);
  };
}
