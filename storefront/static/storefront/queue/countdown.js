/* Countdowns. Pure. */

/* Milliseconds until `target` as "2 days 03:04:05", "03:04:05" or "4:05". */
export function untilText(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const days = Math.floor(total / 86400);
  const h = Math.floor((total % 86400) / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
  const two = (n) => (n < 10 ? "0" : "") + n;
  const time = (h || days ? two(h) + ":" + two(m) : String(m)) + ":" + two(s);
  if (days) return days + (days === 1 ? " day " : " days ") + time;
  return time;
}

/* The same in words for screen readers, announced now and then, not every
   second: "2 days, 3 hours", "3 hours, 4 minutes", "4 minutes", "less than a minute". */
export function untilWords(ms) {
  const total = Math.max(0, Math.floor(ms / 1000));
  const days = Math.floor(total / 86400), h = Math.floor((total % 86400) / 3600);
  const m = Math.floor((total % 3600) / 60);
  const unit = (n, word) => n + " " + word + (n === 1 ? "" : "s");
  if (days) return unit(days, "day") + (h ? ", " + unit(h, "hour") : "");
  if (h) return unit(h, "hour") + (m ? ", " + unit(m, "minute") : "");
  if (m) return unit(m, "minute");
  return "less than a minute";
}
