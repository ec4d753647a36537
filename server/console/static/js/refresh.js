// Pages that show live numbers load again every REFRESH_MS, counting from
// the end of the previous load (a slow seatd never gets calls piling up).

export const REFRESH_MS = 5000;

// every runs load now and then REFRESH_MS after each load ends, until
// the returned stop is called. main's data-loads-started and
// data-loads-done count the loads (tests wait on them, not on time).
export function every(main, load) {
  let timer = 0;
  let stopped = false;
  let started = 0;
  let done = 0;
  const run = async () => {
    if (stopped) return;
    main.dataset.loadsStarted = String(++started);
    try {
      await load();
    } finally {
      if (!stopped) {
        main.dataset.loadsDone = String(++done);
        timer = setTimeout(run, REFRESH_MS);
      }
    }
  };
  run();
  return () => {
    stopped = true;
    clearTimeout(timer);
    delete main.dataset.loadsStarted;
    delete main.dataset.loadsDone;
  };
}

// updated says when the numbers shown were read.
export function updatedText(date = new Date()) {
  return `Updated ${date.toLocaleTimeString('en-GB')}; refreshes every ${REFRESH_MS / 1000} s.`;
}
