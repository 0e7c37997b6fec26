/* Every page but the waiting room: while the signed-in customer holds tickets
   unpaid, a bar says so, counts down, and links back to the waiting room
   where they are paid (GET me/holds/). The waiting room shows its own hold. */
import { api, session } from "./lib/api.js";
import { clock } from "./lib/format.js";

const REREAD_MS = 60000;  // a hold made or paid in another tab shows within a minute

/* The bar's words for one hold at `now` (ms), or "" once it ran out. */
export function holdText(hold, now) {
  const left = (Date.parse(hold.expires_at) - now) / 1000;
  if (!(left > 0)) return "";
  const tickets = hold.quantity === 1 ? "1 ticket" : hold.quantity + " tickets";
  if (hold.paying) return "You hold " + tickets + " for " + hold.event_name + " \u2014 payment under way (" + clock(left) + " left)";
  return "You hold " + tickets + " for " + hold.event_name + " \u2014 pay within " + clock(left);
}

export function startHoldsBar(bar) {
  let holds = [];
  let ticker = null;
  const text = bar.querySelector("[data-hold-text]");
  const link = bar.querySelector("a");

  function draw() {
    const now = Date.now();
    const hold = holds.find((h) => holdText(h, now));
    bar.hidden = !hold;
    if (!hold) { window.clearInterval(ticker); ticker = null; return; }
    text.textContent = holdText(hold, now);
    link.href = hold.url;
  }

  async function read() {
    if (!session.get()) { holds = []; draw(); return; }
    const r = await api("GET", "/api/v1/me/holds/");
    holds = r.ok && r.data ? r.data.results || [] : [];
    if (holds.length && !ticker) ticker = window.setInterval(draw, 1000);
    draw();
  }

  read();
  window.setInterval(() => { if (!document.hidden) read(); }, REREAD_MS);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) read(); });
  session.onEnd(read);
}

const bar = document.getElementById("fq-holds");
if (bar) startHoldsBar(bar);
