/* The estimated wait, as a range and never a confident wrong number. Pure.

   Two bounds:
   - the earliest: admission lets at most one batch in per tick, so a customer
     at place p needs at least ceil(p / batch) ticks (the first one may come
     at once);
   - the latest: at the admission rate measured over the last ticks, with a
     margin (a rate measured while few were waiting is low, so this bound is
     generous rather than short).
   With no measured rate there is no latest bound: we say so rather than guess. */

const MARGIN = 1.5;

export function etaRange({ position, ratePerSecond, batchSize, intervalSeconds, waitBeforeStart = 0 }) {
  if (typeof position !== "number" || position < 1) return null;
  const batch = Math.max(1, batchSize || 1);
  const interval = Math.max(1, intervalSeconds || 5);
  const before = Math.max(0, waitBeforeStart || 0);
  const ticks = Math.ceil(position / batch);
  const low = before + (ticks - 1) * interval;
  if (!(typeof ratePerSecond === "number" && ratePerSecond > 0)) return { low, high: null };
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
