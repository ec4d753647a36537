// Usage: one license's peak concurrent seats and denials per UTC day over
// 30 days against its seat limit (GetUsageReport), and its users by
// seat-hours.
import {listLicenses, usageReport} from '../api.js';
import {allows} from '../can.js';
import {USAGE_HEADER, download, toCSV, usageRows} from '../csv.js';
import {h, replace, table, num, isoDate, licenseLabel} from '../dom.js';
import {barChart, legend, lastDays, onWidth} from '../chart.js';

const DAYS = 30;

export function render(main, [id], page) {
  page.title('Usage');
  const body = h('div', {id: 'usage'}, h('p', {class: 'loading'}, 'Loading usage…'));
  main.append(h('h1', {tabindex: -1}, 'Usage'),
    h('p', {class: 'lead'}, `Peak seats held at once and refused acquisitions per day (UTC), last ${DAYS} days.`),
    body);
  let stopChart = null;

  (async () => {
    try {
      const licenses = await listLicenses(page.signal);
      if (licenses.length === 0) {
        replace(body, h('p', {class: 'empty'}, 'No licenses yet.'));
        return;
      }
      const license = licenses.find((l) => l.id === id) || licenses[0];
      const days = lastDays(DAYS);
      const report = await usageReport({
        licenseId: license.id, bucket: 'USAGE_BUCKET_DAY', userLimit: 10,
        startTime: `${days[0]}T00:00:00Z`,
      }, page.signal);
      if (page.signal.aborted) return;
      stopChart = show(body, licenses, license, days, report);
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(body, box);
    }
  })();
  return () => stopChart && stopChart();
}

function show(body, licenses, license, days, report) {
  const byDay = new Map((report.rows || []).filter((r) => r.licenseId === license.id)
    .map((r) => [isoDate(new Date(r.bucketStart)), r]));
  const rows = days.map((d) => byDay.get(d) || {});
  const peak = rows.map((r) => r.peakSeats || 0);
  const denials = rows.map((r) => Number(r.denials || 0));
  const series = [
    {key: 'peak', name: 'Peak seats in use', cls: 'bar-peak', values: peak},
    {key: 'denials', name: 'Denials (no seat free)', cls: 'bar-denials', values: denials},
  ];
  const limit = {value: license.seats, label: `limit ${license.seats} seats`};
  const maxPeak = Math.max(...peak);
  const atLimit = peak.filter((p) => p >= license.seats).length;
  const totalDenials = denials.reduce((a, b) => a + b, 0);
  const seatHours = rows.reduce((a, r) => a + (r.seatHours || 0), 0);

  const select = h('select', {id: 'usage-license'}, licenses.map((l) =>
    h('option', {value: l.id, selected: l.id === license.id}, licenseLabel(l))));
  // The CSV: the report's rows as the API answered them (a row per day
  // and feature with something to say), for a spreadsheet or billing.
  const csvName = `seatd-usage-${license.id}-${days[0]}-${days[days.length - 1]}.csv`;
  const csvButton = allows('usage.export') ? h('button', {type: 'button', class: 'quiet', id: 'usage-csv',
    onclick: () => download(csvName, toCSV(USAGE_HEADER, usageRows(report, licenses)))}, 'Download CSV') : null;
  select.addEventListener('change', () => { location.hash = `#/usage/${encodeURIComponent(select.value)}`; });
  const chartBox = h('div', {class: 'chart-box', id: 'usage-chart'});
  replace(body,
    h('div', {class: 'section-head'}, h('div', {class: 'field'}, h('label', {for: 'usage-license'}, 'License'), select), csvButton),
    h('ul', {class: 'stats'},
      h('li', {}, h('span', {class: 'stat'}, `${maxPeak} / ${license.seats}`), ' peak seats in use'),
      h('li', {}, h('span', {class: 'stat'}, String(atLimit)), atLimit === 1 ? ' day at the limit' : ' days at the limit'),
      h('li', {}, h('span', {class: 'stat'}, num(totalDenials)), ' denials'),
      h('li', {}, h('span', {class: 'stat'}, num(seatHours, 1)), ' seat-hours')),
    chartBox,
    legend(series, limit),
    h('details', {}, h('summary', {}, 'The numbers, day by day'),
      table('Usage per day', ['Day (UTC)', 'Peak seats', 'Denials', 'Acquisitions', 'Seat-hours', 'Users', 'Queue waits'],
        days.map((d, i) => h('tr', {}, h('th', {scope: 'row'}, d), h('td', {}, String(peak[i])), h('td', {}, num(denials[i])),
          h('td', {}, num(rows[i].acquisitions)), h('td', {}, num(rows[i].seatHours, 2)),
          h('td', {}, num(rows[i].distinctUsers)), h('td', {}, num(rows[i].queueWaits)))).reverse())),
    h('section', {'aria-labelledby': 'users-h'}, h('h2', {id: 'users-h'}, 'Users by seat-hours'),
      (report.users || []).length === 0 ? h('p', {class: 'empty'}, 'No seats held in these 30 days.')
        : table('Users by seat-hours', ['User', 'Seat-hours', 'Sessions'],
          report.users.map((u) => h('tr', {}, h('th', {scope: 'row'}, u.user), h('td', {}, num(u.seatHours, 2)),
            h('td', {}, num(u.sessions)))))));
  return onWidth(chartBox, (width) => replace(chartBox, barChart({
    title: `${license.name || license.id}: peak seats and denials per day`,
    desc: `Last ${DAYS} days, UTC. Highest peak ${maxPeak} of ${license.seats} seats; ${totalDenials} denials.`,
    days, series, limit, width,
  })));
}
