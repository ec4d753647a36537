// DOM building and formatting. Pages build every element with h() or s()
// and set text with text nodes only: nothing from the API is ever parsed
// as HTML (the Content-Security-Policy refuses innerHTML anyway).

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset') {
      for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    } else if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'value' && 'value' in el && !(el instanceof SVGElement)) {
      el.value = v;
    } else if (k === 'checked' || k === 'disabled' || k === 'hidden') {
      el[k] = Boolean(v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

// append adds children: nodes, strings (as text), arrays of them; null
// and undefined are skipped.
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h makes an HTML element: h('a', {href: '#/'}, 'Overview').
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s makes an SVG element.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

// replace empties el and appends children.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// A table inside a region that scrolls sideways on a narrow screen (and
// can be scrolled by keyboard: it is focusable and labelled).
export function table(label, head, rows, attrs = {}) {
  return h('div', {class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: 0},
    h('table', attrs,
      h('caption', {class: 'visually-hidden'}, label),
      h('thead', {}, h('tr', {}, head.map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, rows)));
}

const pad = (n) => String(n).padStart(2, '0');

// isoDate is the UTC date of a Date, YYYY-MM-DD (the usage and zombie
// reports bucket by UTC day).
export function isoDate(d) {
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

// when shows a timestamp in the browser's time zone, in a <time> element
// whose title is the instant in UTC.
export function when(ts) {
  if (!ts) return h('span', {class: 'none'}, '—');
  const d = new Date(ts);
  const local = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return h('time', {datetime: d.toISOString(), title: d.toISOString()}, local);
}

// seconds parses a protobuf JSON Duration ("360s", "1.5s").
export function seconds(duration) {
  if (!duration) return 0;
  return Number.parseFloat(String(duration).replace(/s$/, '')) || 0;
}

// span says a number of seconds the way people read it, in its two
// largest units, a zero second one left out: "4 min 12 s", "5 min", "1 h".
export function span(sec) {
  sec = Math.round(Math.abs(sec));
  const two = (n1, u1, n2, u2) => (n2 ? `${n1} ${u1} ${n2} ${u2}` : `${n1} ${u1}`);
  if (sec < 60) return `${sec} s`;
  if (sec < 3600) return two(Math.floor(sec / 60), 'min', sec % 60, 's');
  if (sec < 86400) return two(Math.floor(sec / 3600), 'h', Math.floor((sec % 3600) / 60), 'min');
  return two(Math.floor(sec / 86400), 'd', Math.floor((sec % 86400) / 3600), 'h');
}

// until says how long from now until ts: "in 4 min 12 s", or "3 s ago".
export function until(ts, now = Date.now()) {
  if (!ts) return '—';
  const sec = (new Date(ts).getTime() - now) / 1000;
  return sec >= 0 ? `in ${span(sec)}` : `${span(sec)} ago`;
}

// num formats a number (int64 values arrive as JSON strings).
export function num(v, digits = 0) {
  const n = Number(v ?? 0);
  return n.toLocaleString('en-US', {maximumFractionDigits: digits, minimumFractionDigits: 0});
}

// shortId is the start of an id, enough to tell apart licenses of one
// name: "lic_3fa2c1d0" of "lic_3fa2c1d0…" (an id of 12 characters or
// fewer is shown whole).
export function shortId(id) {
  id = String(id || '');
  return id.length > 12 ? id.slice(0, 12) : id;
}

// idTag shows an id's start, the whole id in its title (hover, and
// screen readers read the text).
export function idTag(id) {
  return h('code', {class: 'short-id', title: id}, shortId(id));
}

// licenseLabel names a license as text where only text fits (a select's
// option, a page title): its name and short id, "ACME CAD (lic_3fa2c1d0)".
export function licenseLabel(l) {
  return l.name ? `${l.name} (${shortId(l.id)})` : l.id;
}
