// Zombies: leases that ended by their deadline passing (no release) per
// UTC day over 30 days, the licenses with the most, and the mean time from
// a zombie's last heartbeat to its cleanup (GetZombieReport).
import {zombieReport} from '../api.js';
import {h, idTag, replace, table, num} from '../dom.js';
import {barChart, legend, lastDays, onWidth} from '../chart.js';

const DAYS = 30;

export function render(main, _params, page) {
  page.title('Zombies');
  const body = h('div', {id: 'zombies'}, h('p', {class: 'loading'}, 'Loading the zombie report…'));
  main.append(h('h1', {tabindex: -1}, 'Zombies'),
    h('p', {class: 'lead'}, `Leases whose holder stopped heartbeating without releasing (a crash, sleep, lost network), as cleanup found them, last ${DAYS} days (UTC).`),
    body);
  let stopChart = null;
  (async () => {
    try {
      const days = lastDays(DAYS);
      const report = await zombieReport({startTime: `${days[0]}T00:00:00Z`, topLimit: 10}, page.signal);
      if (page.signal.aborted) return;
      stopChart = show(body, days, report);
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(body, box);
    }
  })();
  return () => stopChart && stopChart();
}

function show(body, days, report) {
  const byDay = new Map((report.days || []).map((d) => [d.date, d]));
  const zombies = days.map((d) => Number(byDay.get(d)?.zombiesCleaned || 0));
  const affected = days.map((d) => Number(byDay.get(d)?.affectedLicenses || 0));
  const series = [
    {key: 'zombies', name: 'Zombies cleaned', cls: 'bar-zombies', values: zombies},
    {key: 'licenses', name: 'Licenses affected', cls: 'bar-licenses', values: affected},
  ];
  const chartBox = h('div', {class: 'chart-box', id: 'zombie-chart'});
  const top = report.topLicenses || [];
  replace(body,
    h('ul', {class: 'stats'},
      h('li', {}, h('span', {class: 'stat', id: 'zombies-total'}, num(report.zombiesTotal)), ' zombies'),
      h('li', {}, h('span', {class: 'stat'}, num(report.meanMinutesToCleanup, 1)), ' minutes, mean, from last heartbeat to cleanup')),
    chartBox,
    legend(series),
    h('section', {'aria-labelledby': 'top-h'}, h('h2', {id: 'top-h'}, 'Licenses with the most zombies'),
      top.length === 0 ? h('p', {class: 'empty'}, 'No zombies in these 30 days.')
        : table('Licenses with the most zombies', ['License', 'Zombies', 'Leases ever', 'Zombie share'],
          top.map((l) => h('tr', {dataset: {licenseId: l.licenseId}},
            h('th', {scope: 'row'}, h('a', {href: `#/licenses/${encodeURIComponent(l.licenseId)}`}, l.licenseName || l.licenseId),
              l.licenseName ? [' ', idTag(l.licenseId)] : null, l.feature ? h('div', {class: 'sub'}, `feature ${l.feature}`) : null),
            h('td', {}, num(l.zombieCount)), h('td', {}, num(l.leaseCount)),
            h('td', {}, `${num(l.zombiePercentage, 1)} %`))))));
  return onWidth(chartBox, (width) => replace(chartBox, barChart({
    title: 'Zombies cleaned per day',
    desc: `Last ${DAYS} days, UTC: ${num(report.zombiesTotal)} zombies in all.`,
    days, series, width,
  })));
}
