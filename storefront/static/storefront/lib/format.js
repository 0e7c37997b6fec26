/* Formatting shared by the pages. Pure, except localTimes (it edits the DOM). */

// Currencies without a minor unit (the same list as fairqueue/money.py).
const ZERO_DECIMAL = ["BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX",
  "VND", "VUV", "XAF", "XOF", "XPF"];

export function number(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/* Minor units to text, exactly as the server renders it: "NGN 5,000.00". */
export function money(minor, currency) {
  currency = String(currency || "").toUpperCase();
  let n = Math.round(Number(minor));
  if (!isFinite(n)) return "";
  const sign = n < 0 ? "-" : "";
  n = Math.abs(n);
  if (ZERO_DECIMAL.indexOf(currency) !== -1) return currency + " " + sign + number(n);
  const whole = Math.floor(n / 100), cents = n % 100;
  return currency + " " + sign + number(whole) + "." + (cents < 10 ? "0" : "") + cents;
}

/* 299 -> "4:59", 3725 -> "1:02:05". */
export function clock(seconds) {
  seconds = Math.max(0, Math.floor(seconds));
  const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
  const mm = h ? (m < 10 ? "0" : "") + m : String(m);
  return (h ? h + ":" : "") + mm + ":" + (s < 10 ? "0" : "") + s;
}

/* A moment in the visitor's own time zone, with the zone's name:
   "Sat 12 Jul 2026, 14:00 WAT". */
export function localDateTime(when, locale) {
  const date = when instanceof Date ? when : new Date(when);
  if (isNaN(date.getTime())) return "";
  return date.toLocaleString(locale, {
    weekday: "short", day: "numeric", month: "short", year: "numeric",
    hour: "2-digit", minute: "2-digit", timeZoneName: "short",
  });
}

/* <time datetime> elements: show the visitor's local time, keep UTC as a tooltip. */
export function localTimes(root) {
  (root || document).querySelectorAll("time[datetime]").forEach((node) => {
    const text = localDateTime(node.getAttribute("datetime"));
    if (!text) return;
    node.title = node.textContent.trim();
    node.textContent = text;
  });
}
