/* The estimated wait, as a range and never a confident wrong number. Pure.

   Two bounds:
   - the earliest: admission lets at most one batch in per tick, so a customer
     at place p needs at least ceil(p / batch) ticks (the first one may come
     at once);
   - the latest: at the admission rate measured over the last ticks, with a
     margin (a rate measured while few were waiting is low, so this bound is
     generous rather than short).
   With no measured rate there is no latest bound, except within the first
   batches: their admission is the next tick or two, whatever the rate.

   What the page shows is steadyRange's: the previous estimate counted down,
   moved only part of the way toward a new one, so it narrows steadily
   instead of jumping with every measurement, and survives a refresh. */

const MARGIN = 1.5;
const HEAD_TICKS = 2;   // this close to the head the next ticks admit you, rate or not
const SETTLE_SECONDS = 20;  // a new estimate takes about this long to show in full

export function etaRange({ position, ratePerSecond, batchSize, intervalSeconds, waitBeforeStart = 0 }) {
  if (typeof position !== "number" || position < 1) return null;
  const batch = Math.max(1, batchSize || 1);
  const interval = Math.max(1, intervalSeconds || 5);
  const before = Math.max(0, waitBeforeStart || 0);
  const ticks = Math.ceil(position / batch);
  const low = before + (ticks - 1) * interval;
  if (!(typeof ratePerSecond === "number" && ratePerSecond > 0)) {
    return { low, high: ticks <= HEAD_TICKS ? before + ticks * interval : null };
  }
  const high = before + Math.max(ticks * interval, (position / ratePerSecond) * MARGIN);
  return { low, high: Math.max(high, low + interval) };
}

function minutesText(n) { return n + (n === 1 ? " minute" : " minutes"); }
function hoursText(n) { return n + (n === 1 ? " hour" : " hours"); }

/* The range in words: "less than a minute", "about 2 minutes",
   "2–5 minutes", "up to 10 minutes", "1–2 hours", "at least 3 minutes". */
export function etaText(range) {
  if (!range) return "";
  const { low, high } = range;
  if (high === null || high === undefined) {
    if (low < 60) return "Estimating: we are measuring how fast the line moves.";
    return "At least " + (low < 5400 ? minutesText(Math.round(low / 60)) : hoursText(Math.round(low / 3600))) + ".";
  }
  if (high <= 60) return "Less than a minute.";
  if (high < 5400) {
    const lo = Math.floor(low / 60), hi = Math.ceil(high / 60);
    if (lo < 1) return "Up to " + minutesText(hi) + ".";
    if (lo === hi) return "About " + minutesText(hi) + ".";
    return lo + "–" + minutesText(hi) + ".";
  }
  const lo = Math.floor(low / 3600), hi = Math.ceil(high / 3600);
  if (lo < 1) return "Up to " + hoursText(hi) + ".";
  if (lo === hi) return "About " + hoursText(hi) + ".";
  return lo + "–" + hoursText(hi) + ".";
}

/* The estimate to show at `now` (ms): `next` (a fresh range, or null when
   there is none) weighed against `shown` ({low, high, at}: what was shown
   last, at `at` ms), which counts down meanwhile. The upper bound moves
   toward the fresh one exponentially (SETTLE_SECONDS), never jumps; with no
   fresh upper bound the shown one keeps counting down. The lower bound is
   exact (ticks and batches): it is taken as it is. */
export function steadyRange(shown, next, now) {
  if (!shown || typeof shown.at !== "number") return next ? { ...next, at: now } : null;
  const elapsed = Math.max(0, (now - shown.at) / 1000);
  const before = shown.high === null || shown.high === undefined ? null : Math.max(0, shown.high - elapsed);
  if (!next) return { low: Math.max(0, shown.low - elapsed), high: before, at: now };
  let high = next.high;
  if (before !== null) {
    if (high === null || high === undefined) high = before;
    else high = before + (high - before) * (1 - Math.exp(-elapsed / SETTLE_SECONDS));
  }
  const low = next.low;
  if (high !== null && high !== undefined) high = Math.max(high, low);
  return { low, high: high === undefined ? null : high, at: now };
}
