// CSV files made in the page and handed to the browser as a download (a
// blob: URL; nothing goes to seatd).

// cell quotes one value as RFC 4180 wants it; a text value that a
// spreadsheet would run as a formula (=, +, -, @, tab, CR first) gets a
// leading ' so that it stays text.
export function cell(v) {
  let s = v === undefined || v === null ? '' : String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

// toCSV is the header and rows (arrays of values) as CSV text, CRLF line
// ends.
export function toCSV(header, rows) {
  return [header, ...rows].map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
}

// download hands text to the browser as a file named name.
export function download(name, text, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], {type: `${type};charset=utf-8`}));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// USAGE_HEADER is the usage report CSV's columns: the API's
// UsageReportRow fields, snake case, times in UTC RFC 3339.
export const USAGE_HEADER = ['license_id', 'license_name', 'feature', 'bucket_start', 'peak_seats', 'seat_hours', 'acquisitions',
  'denials', 'distinct_users', 'queue_waits', 'mean_queue_wait_seconds'];

// usageRows are a usage report's rows as CSV rows, names looked up in
// licenses (a deleted license has none).
export function usageRows(report, licenses) {
  const names = new Map(licenses.map((l) => [l.id, l.name || '']));
  return (report.rows || []).map((r) => [
    r.licenseId, names.get(r.licenseId) || '', r.feature || '', r.bucketStart, r.peakSeats || 0, r.seatHours || 0,
    Number(r.acquisitions || 0), Number(r.denials || 0), Number(r.distinctUsers || 0), Number(r.queueWaits || 0),
    Number.parseFloat(String(r.meanQueueWait || '0s').replace(/s$/, '')) || 0,
  ]);
}
