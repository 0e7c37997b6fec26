/* The waiting room's state machine. Pure: it decides which panel a customer
   sees from what the server says (GET events/{id}/me/, the event's status,
   the clock) and how a socket push moves it. The view only draws panels.

   Panels: upcoming (countdown) · signin · join · waiting · admitted (choose
   tickets) · claim (held, pay) · paying (payment under way) · confirmed
   (tickets) · ended. */

/* The sale as a customer sees it at `now` (mirrors storefront/pages.py). */
export function saleStateAt(event, now) {
  const t = (iso) => (iso ? Date.parse(iso) : null);
  if (event.status === "ENDED" || now >= t(event.sale_end)) return "ended";
  if (event.status === "SOLD_OUT") return "sold_out";
  if (event.status === "PAUSED") return "paused";
  const opens = t(event.prequeue_opens_at);
  const start = t(event.sale_start);
  if (event.status === "ACTIVE" && opens !== null && opens <= now && now < start) return "prequeue";
  if (now < start) return "upcoming";
  return "on_sale";
}

/* When the waiting room opens: the pre-queue if there is one, else the sale. */
export function opensAt(event) {
  return Date.parse(event.prequeue_opens_at || event.sale_start);
}

export const EVENT_NOTICE = {
  ACTIVE: "",
  PAUSED: "Sales are paused. Keep your place: admission resumes when the sale does.",
  SOLD_OUT: "Sold out for now. Tickets come back when a hold runs out unpaid, so you can keep your place in line.",
  ENDED: "The sale has ended.",
};

/* The badge beside the event's name, by sale state (as the server renders it). */
export const SALE_BADGE = {
  upcoming: ["upcoming", "Opens soon"],
  prequeue: ["prequeue", "Waiting room open"],
  on_sale: ["on_sale", "On sale"],
  paused: ["paused", "Paused"],
  sold_out: ["sold_out", "Sold out"],
  ended: ["ended", "Sale ended"],
};

const LIVE_PAYMENT = ["INITIALIZING", "PENDING"];
const JOINABLE = ["prequeue", "on_sale", "paused", "sold_out"];

/* The panel for this customer, and a notice about what happened before
   (a hold that ran out, a payment that failed). `me` is the body of
   GET events/{id}/me/, or null when not signed in. */
// A ticket that no longer lets its holder in (cancelled, resold, sent away).
const GONE_TICKET = ["void", "resold", "transferred"];

export function phaseFor(me, { saleState }) {
  if (!me) {
    if (saleState === "upcoming") return { phase: "upcoming", notice: "" };
    if (saleState === "ended") return { phase: "ended", notice: "" };
    return { phase: "signin", notice: "" };
  }
  const claim = me.claim, payment = me.payment, queue = me.queue;
  const tickets = (me.tickets || []).filter((t) => !GONE_TICKET.includes(t.status));
  if (claim && claim.status === "CONFIRMED") return { phase: "confirmed", notice: "" };
  if (claim && claim.status === "CLAIMED") {
    if (payment && LIVE_PAYMENT.indexOf(payment.status) !== -1) return { phase: "paying", notice: "" };
    // A declined or abandoned attempt keeps the hold: the buyer tries again.
    const failed = payment && payment.status === "FAILED"
      ? payment.status_text + ". Your tickets are still held: try again before the hold runs out." : "";
    return { phase: "claim", notice: failed };
  }
  if (tickets.length) return { phase: "confirmed", notice: "" };
  if (queue && queue.status === "ADMITTED") return { phase: "admitted", notice: "" };
  if (queue && queue.status === "WAITING") return { phase: "waiting", notice: "" };
  let notice = "";
  if (claim && claim.status === "RELEASED") {
    notice = claim.release_text + ".";
    if (payment && payment.status !== "FAILED" && payment.status !== "CONFIRMED"
        && payment.status_text !== claim.release_text) notice += " " + payment.status_text + ".";
  } else if (queue && queue.status === "EXPIRED" && queue.reason === "sold_out") {
    notice = SOLD_OUT_FIRST;
  } else if (queue && queue.status === "EXPIRED") {
    notice = "Your turn passed before you chose tickets.";
  }
  if (saleState === "ended") return { phase: "ended", notice };
  if (saleState === "upcoming") return { phase: "upcoming", notice };
  if (JOINABLE.indexOf(saleState) !== -1) return { phase: "join", notice };
  return { phase: "ended", notice };
}

/* What a socket push means: `{eventStatus}` (the sale changed), `{admitted}`
   (our turn, with the token), `{line}` (the line state: the line moved),
   `{snapshot}` (our own number), `{refresh}` (ask the server again), or `{}`
   (nothing for this panel). The end of the sale asks nothing: the page
   says so and stops. */
export function pushEffect(message, phase) {
  if (!message || typeof message !== "object") return {};
  switch (message.type) {
    case "position": return { snapshot: message };
    case "line": return { line: message };
    case "admitted":
      if (!message.admission_token) return { refresh: true };
      return {
        admitted: {
          token: message.admission_token,
          expiresAt: message.admission_expires_at,
          extendable: message.admission_extendable !== false,
        },
      };
    case "expired":
      if (message.reason === "sale_ended") return { eventStatus: "ENDED" };
      return phase === "waiting" || phase === "admitted" ? { refresh: true } : {};
    case "paused": return { eventStatus: "PAUSED" };
    case "resumed":
    case "available": return { eventStatus: "ACTIVE" };
    case "sold_out": return { eventStatus: "SOLD_OUT" };
    case "ended": return { eventStatus: "ENDED" };
    default: return {};
  }
}

/* A claim refused because fewer tickets are left than were asked for (409
   not_enough_tickets, details.available: how many): the offer of those,
   `{quantity, text, button}`, or null when the answer names none. */
export function fewerLeftOffer(error) {
  const left = error && error.details ? error.details.available : null;
  if (!Number.isInteger(left) || left < 1) return null;
  return {
    quantity: left,
    text: "Only " + left + " left \u2014 take " + (left === 1 ? "it" : left) + "?",
    button: left === 1 ? "Hold the last ticket" : "Hold these " + left + " tickets",
  };
}

/* Admitted, and nothing was left (EXPIRED, reason sold_out): what the page says. */
export const SOLD_OUT_FIRST = "Sold out while it was your turn. You are first on the waiting list: "
  + "the next ticket that comes back is offered to you.";

/* The warning of the time to choose (WCAG 2.2.1: warned in time, more time on
   request): null while more than `warnAt` seconds are left, or once the time
   is up; else `{text, extend}`, `extend` when the one extension is still
   there (`admission_extendable`). */
export function chooseWarning(leftSeconds, warnAt, extendable) {
  if (leftSeconds > warnAt || leftSeconds <= 0) return null;
  const text = "Your time to choose is almost up: your turn ends in less than " + warnAt + " seconds.";
  if (!extendable) return { text, extend: false };
  return { text: text + " Need more time? You can ask for it once.", extend: true };
}

/* Panels that keep the live link (socket, or polling while it is down). */
export function wantsLive(phase) {
  return phase === "waiting" || phase === "admitted";
}

/* What the screen reader hears when a panel opens. */
export const PHASE_ANNOUNCEMENT = {
  upcoming: "The waiting room is not open yet. This page opens it by itself.",
  signin: "Sign in to join the queue.",
  join: "You can join the queue.",
  waiting: "You are in the queue.",
  admitted: "It is your turn. Choose your tickets.",
  claim: "Your tickets are held. Pay to confirm them.",
  paying: "Waiting for your payment to be confirmed.",
  confirmed: "Paid. Your tickets are ready.",
  ended: "The sale has ended.",
};
