/* The waiting room page (/events/{id}/queue/): wiring. The server's
   GET events/{id}/me/ is the truth this page rebuilds itself from after a
   refresh, in a new tab or on another device. While waiting it asks nothing
   of its own: it knows its number (the join's answer or that one read) and
   places itself from the public line state (line.js), which the socket
   brings when the line moves near it, or which it reads itself (cacheable)
   without a socket. It asks once more for its token when the line state
   says its turn came. After the pre-queue draw a pre-queue page reads its
   number from the draw's public document (its own draw key says where);
   only without one does it ask once more. */
import { api, errorText, pageConfig, session } from "../lib/api.js";
import { clock, localDateTime, money, number } from "../lib/format.js";
import { signinHref } from "../site.js";
import { Attention, offerNotifications } from "./attention.js";
import { ChooseStep } from "./choose.js";
import { ChooseTime } from "./choosetime.js";
import { HoldPanel } from "./hold.js";
import { untilText, untilWords } from "./countdown.js";
import {
  drawDelayMs, fromDraw, mayAskAgain, nextReadMs, numberFromDraw, placeIn, relearnDelayMs,
} from "./line.js";
import { LiveLink, pollDelayMs } from "./live.js";
import {
  PHASE_ANNOUNCEMENT, opensAt, phaseFor, pushEffect, saleStateAt, wantsLive,
} from "./machine.js";
import { SeatStep } from "../seats/step.js";
import {
  announce, busy, el, renderTickets, setError, setEventStatus, setLive, setNotice,
  setText, showPanel,
} from "./view.js";
import { WaitingPanel } from "./waiting.js";

const cfg = pageConfig();
const PUSH_GRACE_MS = 2000;
const DRAW_TRIES = 3;  // reads of the draw's document (404/503) before asking instead
const API = cfg.api;
const EVENT = cfg.event_id;
const event = {
  status: cfg.status, sale_start: cfg.sale_start, sale_end: cfg.sale_end,
  prequeue_opens_at: cfg.prequeue_opens_at,
};

const state = {
  phase: null,
  me: null,
  number: null,       // our number: {position, served, score, epoch} (join answer or a snapshot)
  drawKey: null,      // our key to the pre-queue draw's documents (pre-queue numbers only)
  entryId: null,      // the queue entry our number belongs to
  line: null,         // the last line state (GET queue/state/, or the socket's `line`)
  lineAt: 0,          // when it arrived (ms)
  lineTimer: null,    // the next read of the line state
  asked: false,       // an own question (token or number) is on its way
  askedServed: null,  // served of a WAITING answer to the token question (line.js mayAskAgain)
  relearnTimer: null, // the number is learnt again at a random moment after the draw
  admission: null,    // {token, expiresAt (ms), extendable: its one extension is still there}
  lapsed: false,      // a countdown reached zero; the server decides what follows
};
let ticker = null;
const seats = new SeatStep(cfg);  // the seat map of a reserved tier
const waiting = new WaitingPanel(cfg);
const attention = new Attention();  // "Your turn!" for a customer in another tab
new ChooseStep(cfg, seats, {
  admission: () => state.admission,
  admitted: () => state.phase === "admitted",
  refresh: () => refresh(),
  refreshEvent: () => refreshEvent(),
});
const hold = new HoldPanel(API, { me: () => state.me, refresh: () => refresh() });
const chooseTime = new ChooseTime(cfg, {
  admission: () => state.admission,
  setAdmission: (answer) => { setAdmission(admissionOf(answer)); },
  refresh: () => refresh(),
  redraw: () => tick(),
});

const live = new LiveLink({
  cfg,
  onMessage: onPush,
  onLive: setLive,
  // Without the socket, admitted: our own state (and the seat map again, no
  // deltas then). Waiting pages read the line state on their own timer.
  poll: () => {
    if (state.phase === "waiting") return Promise.resolve(pollDelayMs(null));
    seats.chooseTier();
    return refresh().then(pollDelayMs);
  },
  // A socket (re)opened: its snapshot comes by itself; the sale's status and
  // tiers as they are now.
  onOpen: () => { if (state.phase !== "waiting") refreshEvent(); },
  onClose(code) {
    if (code === 4401) { session.clear(); render("signin"); setError("Your sign-in has expired. Sign in again: your place is kept."); }
    else render("ended");
  },
});

// --- the server's truth ------------------------------------------------------------

async function refresh() {
  if (!session.get()) { decide(null); return; }
  const r = await api("GET", API + "events/" + EVENT + "/me/");
  if (r.ok) { decide(r.data); return r.data.queue ? r.data.queue.poll_after_seconds : null; }
  if (r.status === 401) { decide(null); return; }
  if (r.status === 404) { render("ended"); return; }
  if (r.status !== 0) setError(errorText(r));  // a network blip: the next poll retries
}

/* The event as it is now (a push may have been missed), and tier availability. */
async function refreshEvent() {
  const r = await api("GET", API + "events/" + EVENT + "/", { anonymous: true });
  if (!r.ok || !r.data) return;
  if (r.data.status !== event.status) {
    event.status = r.data.status;
    setEventStatus(event.status, saleStateAt(event, Date.now()));
    if (state.phase === "waiting") drawWaiting();
  }
  (r.data.tiers || []).forEach((tier) => {
    if (typeof tier.available !== "number") return;
    const text = tier.available <= 0 ? "sold out" : number(tier.available) + " left";
    setText("tier-left-" + tier.id, "(" + text + ")");
    const radio = document.querySelector('#claim-form input[value="' + tier.id + '"]');
    if (radio) radio.disabled = tier.available <= 0;
  });
  const checked = document.querySelector("#claim-form input[name=tier_id]:checked");
  if (!checked || checked.disabled) {
    const open = document.querySelector("#claim-form input[name=tier_id]:not([disabled])");
    if (open) open.checked = true;
  }
  if (state.phase === "admitted") seats.chooseTier();  // the map as it is now (a socket came back)
}

/* The public line state (cacheable, no sign-in): read while waiting, with or
   without the socket, on the page's own timer (line.js nextReadMs); a `line`
   message from the socket counts as a read. */
async function readLine() {
  const r = await api("GET", API + "events/" + EVENT + "/queue/state/", { anonymous: true, cache: "default" });
  if (r.ok && r.data) onLine(r.data);
  else scheduleLineRead();
}

function scheduleLineRead() {
  window.clearTimeout(state.lineTimer);
  state.lineTimer = null;
  if (state.phase !== "waiting") return;
  const place = placeIn(state.number, state.line).place;
  const ms = nextReadMs(state.line, place, Date.now(), Math.random, Date.parse(event.sale_start));
  if (ms !== null) state.lineTimer = window.setTimeout(readLine, ms);
}

function onLine(line) {
  state.line = line;
  state.lineAt = Date.now();
  scheduleLineRead();
  if (line.status && line.status !== event.status) {
    event.status = line.status;
    setEventStatus(event.status, saleStateAt(event, Date.now()));
  }
  if (state.phase !== "waiting") return;
  if (event.status === "ENDED") { render("ended"); return; }
  const where = placeIn(state.number, line);
  if (where.relearn) relearnLater(line);
  else if (where.admitted && mayAskAgain(state.askedServed, line)) {
    // With the socket the `admitted` message brings the token: ask only if
    // it has not come a moment later.
    if (live.isOpen()) window.setTimeout(() => { if (state.phase === "waiting") askOwn(); }, PUSH_GRACE_MS);
    else askOwn();
  }
  drawWaiting();
}

/* Our number: from the join's answer, a snapshot, or GET me/. */
function takeNumber(q) {
  state.drawKey = q.draw_key || null;
  state.entryId = q.queue_entry_id || (state.me && state.me.queue && state.me.queue.queue_entry_id) || state.entryId;
  setNumber({ position: q.position, served: q.served, score: q.score, epoch: q.epoch });
}

function setNumber(n) {
  state.number = n;
  state.askedServed = null;
  waiting.track(state.entryId, n.position);
}

/* After the draw: learn the number again once, at a random moment within
   the state's window (every page at once would be the whole line at once);
   a pre-queue page reads it from the draw's public document, sooner (a
   cache answers it). */
function relearnLater(line) {
  if (state.relearnTimer) return;
  const drawn = fromDraw(state.number, state.drawKey, line);
  state.relearnTimer = window.setTimeout(() => {
    state.relearnTimer = null;
    if (drawn) readDraw(DRAW_TRIES); else askOwn();
  }, drawn ? drawDelayMs(line, Math.random) : relearnDelayMs(line, Math.random));
}

/* Where our draw key's rank is: [shard, entry], the hex digits of its
   SHA-256 (null where the browser has no Web Crypto: not a secure context). */
async function drawPlace(key) {
  if (!window.crypto || !window.crypto.subtle) return null;
  const digest = await window.crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  const hex = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  return [hex.slice(0, 2), hex.slice(2, 16)];
}

/* Our number from the draw's public document (no sign-in, cacheable);
   asked the authenticated way when it has none for us or cannot be read. */
async function readDraw(tries) {
  if (state.phase !== "waiting" || !fromDraw(state.number, state.drawKey, state.line)) return;
  const place = await drawPlace(state.drawKey);
  if (!place) { askOwn(); return; }
  const r = await api("GET", API + "events/" + EVENT + "/queue/draw/" + place[0] + "/", { anonymous: true, cache: "default" });
  if (state.phase !== "waiting") return;
  const drawn = r.ok ? numberFromDraw(r.data, place[1]) : null;
  if (drawn) {
    setNumber(drawn);
    if (state.line) onLine(state.line);  // admitted meanwhile: the frontier says so
    else drawWaiting();
  } else if (!r.ok && tries > 1 && (r.status === 404 || r.status === 503 || r.status === 0)) {
    window.setTimeout(() => readDraw(tries - 1), Math.max(1, r.retryAfter || 1) * 1000);
  } else {
    askOwn();
  }
}

/* One question about ourselves: over the socket when it is open (the answer
   comes as a `position` push), else GET queue/position/ (the token comes
   with it when admitted). */
async function askOwn() {
  if (state.asked) return;
  if (live.ask()) return;
  state.asked = true;
  const r = await api("GET", API + "events/" + EVENT + "/queue/position/");
  state.asked = false;
  if (r.ok) onSnapshot(r.data);
  else if (r.status === 401) decide(null);
  else if (r.status === 404) refresh();
}

function onSnapshot(s) {
  if (s.status === "WAITING") {
    takeNumber(s);
    // The line said our turn came, the answer says WAITING (a tie on the
    // score): ask again only after a later admission.
    if (state.line && placeIn(state.number, state.line).admitted) state.askedServed = s.served;
    if (state.phase === "waiting") drawWaiting(); else refresh();
  } else if (s.status === "ADMITTED" && s.admission_token) {
    setAdmission(admissionOf(s));
    render("admitted");
  } else {
    refresh();  // left, expired or done: the whole state again
  }
}

function decide(me) {
  state.me = me;
  const { phase, notice } = phaseFor(me, { saleState: saleStateAt(event, Date.now()) });
  if (me && me.queue && me.queue.status === "WAITING") takeNumber(me.queue);
  if (me && me.queue && me.queue.status === "ADMITTED") setAdmission(admissionOf(me.queue));
  setNotice(notice);
  render(phase);
  // Admitted, and nothing was left: the waiting list (waitlist.js) has us first.
  if (me && me.queue && me.queue.reason === "sold_out") document.dispatchEvent(new CustomEvent("fq:waitlist"));
}

/* The admission in an answer (position, me/, the extension): token, end of
   the time to choose, and whether its one extension is still there. */
function admissionOf(q) {
  return {
    token: q.admission_token,
    expiresAt: Date.parse(q.admission_expires_at),
    extendable: q.admission_extendable !== false,
  };
}

/* A new end of the time to choose (pushed, or the extension's answer): a
   countdown that had reached zero runs again. */
function setAdmission(admission) {
  state.admission = admission;
  if (admission.expiresAt > Date.now() && state.lapsed && state.phase === "admitted") {
    state.lapsed = false;
    el("claim-button").disabled = false;
  }
}

// --- drawing ---------------------------------------------------------------------------

function render(phase) {
  const changed = phase !== state.phase;
  if (changed && state.phase === "admitted") attention.reset();
  if (changed && phase === "admitted" && state.phase === "waiting" && state.admission) {
    attention.call({ body: "Choose your tickets within " + clock((state.admission.expiresAt - Date.now()) / 1000) + "." });
  }
  state.phase = phase;
  if (changed) state.lapsed = false;
  if (phase !== "waiting") {
    window.clearTimeout(state.relearnTimer);
    window.clearTimeout(state.lineTimer);
    state.relearnTimer = state.lineTimer = null;
  } else if (changed) readLine();
  showPanel(phase);
  if (phase === "waiting") drawWaiting();
  if (phase === "admitted") drawAdmitted(changed);
  if (phase === "claim" || phase === "paying") hold.draw();
  if (phase === "confirmed") drawConfirmed();
  if (phase === "signin") el("signin-link").href = signinHref();
  if (phase === "upcoming") el("upcoming-signin").hidden = Boolean(session.get());
  if (changed && PHASE_ANNOUNCEMENT[phase]) announce(PHASE_ANNOUNCEMENT[phase]);
  el("live").hidden = !wantsLive(phase);
  if (wantsLive(phase)) live.start(); else live.stop();
  startTicker();
}

function drawWaiting() {
  waiting.draw(state.number, state.line, event, Date.now());
}

function drawAdmitted(first) {
  el("claim-button").disabled = false;
  if (first) {
    refreshEvent();
    const choice = document.querySelector("#claim-form input[name=tier_id]:checked");
    if (choice) choice.focus();
  }
}

function drawConfirmed() {
  const me = state.me;
  const tickets = (me && me.tickets) || [];
  renderTickets(tickets);
  const c = me && me.claim;
  setText("receipt", c && c.status === "CONFIRMED"
    ? c.quantity + " × " + c.tier_name + ", " + money(c.amount, c.currency) + " paid"
      + (me.payment ? " (reference " + me.payment.reference + ")." : ".")
    : "");
}

// --- the clock: countdowns, and the waiting room opening by itself -------------------------

function startTicker() {
  if (!ticker) ticker = window.setInterval(tick, 1000);
  tick();
}

function tick() {
  const now = Date.now();
  if (state.phase === "waiting") {
    drawWaiting();  // the wait counts down; the place moves only with the data
  } else if (state.phase === "upcoming") {
    const left = opensAt(event) - now;
    setText("opens-countdown", untilText(left));
    el("opens-countdown").setAttribute("aria-label", "Opens in " + untilWords(left));
    if (left <= 0 && !state.lapsed) {
      state.lapsed = true;
      // The waiting room opened: switch by itself, no reload.
      refreshEvent().then(() => {
        setEventStatus(event.status, saleStateAt(event, Date.now()));
        return refresh();
      });
    }
  } else if (state.phase === "admitted" && state.admission) {
    const left = (state.admission.expiresAt - now) / 1000;
    setText("admission-countdown", clock(left));
    chooseTime.draw(left);
    if (left <= 0 && !state.lapsed) {
      state.lapsed = true;
      el("claim-button").disabled = true;
      window.setTimeout(refresh, 6000);  // the admission tick expires it within seconds
    }
  } else if ((state.phase === "claim" || state.phase === "paying") && state.me && state.me.claim) {
    const left = (Date.parse(state.me.claim.expires_at) - now) / 1000;
    setText("claim-countdown", clock(left));
    setText("paying-countdown", clock(left));
    if (left <= 0 && !state.lapsed) {
      state.lapsed = true;
      hold.lapse();
      window.setTimeout(refresh, 3000);  // expiry (or a payment in flight) decides
    }
  } else {
    window.clearInterval(ticker);
    ticker = null;
  }
}

// --- pushes ------------------------------------------------------------------------------

function onPush(message) {
  if (message && message.type === "seats") { seats.onPush(message); return; }
  const effect = pushEffect(message, state.phase);
  if (effect.eventStatus) {
    event.status = effect.eventStatus;
    setEventStatus(event.status, saleStateAt(event, Date.now()));
    if (event.status === "ENDED" && state.phase === "admitted" && el("room").classList.contains("on-waitlist")) {
      refresh();  // an offer from the waiting list may outlive the sale (returns open): ask
      return;
    }
    if (event.status === "ENDED" && (state.phase === "waiting" || state.phase === "admitted")) {
      render("ended");  // the sale is over: nothing more to ask
      return;
    }
    if (state.phase === "waiting") drawWaiting();
  }
  if (effect.snapshot) {
    const s = effect.snapshot;
    if (s.status === "WAITING" && state.phase === "waiting") onSnapshot(s);
    else if (s.status === "ADMITTED" && state.phase === "waiting") onSnapshot(s);
    else if (s.status && s.status !== "WAITING" || state.phase !== "waiting") refresh();
  }
  if (effect.line) onLine(effect.line);
  if (effect.admitted) {
    const a = effect.admitted;
    setAdmission({ token: a.token, expiresAt: Date.parse(a.expiresAt), extendable: a.extendable });
    render("admitted");
  }
  if (effect.refresh) refresh();
}

// --- actions -----------------------------------------------------------------------------

async function join() {
  const buttons = [el("join-button")];
  setError("");
  buttons.forEach((b) => busy(b, true, "Joining…"));
  const r = await api("POST", API + "events/" + EVENT + "/queue/", { challenge: true });
  buttons.forEach((b) => busy(b, false, "Join the queue"));
  if (r.ok && r.data.status === "WAITING") {
    // The answer is our number: nothing more to ask.
    decide({ event_id: EVENT, queue: r.data, claim: null, payment: null, tickets: [] });
    return;
  }
  if (r.ok || r.error.code === "already_in_queue" || r.error.code === "already_claimed") {
    await refresh();
    return;
  }
  if (r.status === 401) { render("signin"); setError("Please sign in again."); return; }
  setError(errorText(r));
}

async function leave() {
  if (!window.confirm("Leave the queue? You give up your place: joining again puts you at the back of the line.")) return;
  const button = el("leave-button");
  setError("");
  busy(button, true, "Leaving…");
  const r = await api("DELETE", API + "events/" + EVENT + "/queue/");
  busy(button, false, "Leave the queue");
  if (r.ok || r.error.code === "not_in_queue" || r.error.code === "invalid_transition") {
    await refresh();
    if (r.ok) setNotice("You left the queue and gave up your place. Join again to get a new place at the back of the line.");
    return;
  }
  setError(errorText(r));
}

// --- start ---------------------------------------------------------------------------------

function start() {
  el("join-button").addEventListener("click", join);
  el("leave-button").addEventListener("click", leave);
  offerNotifications(el("notify-button"), el("notify-hint"));
  el("check-payment").addEventListener("click", refresh);
  el("opens-at").textContent = localDateTime(opensAt(event));
  setEventStatus(event.status, saleStateAt(event, Date.now()));
  // Back from the checkout page through the browser's cache: ask again.
  window.addEventListener("pageshow", (e) => { if (e.persisted) refresh(); });
  // Another tab signed out, or signed in: follow it.
  window.addEventListener("storage", (e) => { if (e.key === "fq.session") refresh(); });
  session.onEnd(() => { live.stop(); decide(null); });
  refresh();
}

start();
