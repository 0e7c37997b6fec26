/* The payment return page, once paid: the tickets of this purchase (their
   codes, seats and the total), read with the customer's own sign-in
   (GET events/{id}/me/), never from the payment reference the page was
   opened with. Someone not signed in as the buyer sees where to sign in. */
import { api, pageConfig, session } from "./lib/api.js";
import { money } from "./lib/format.js";

const cfg = pageConfig();
const box = document.getElementById("paid-tickets");

function node(tag, className, text) {
  const n = document.createElement(tag);
  if (className) n.className = className;
  if (text !== undefined) n.textContent = text;
  return n;
}

function signInNote() {
  const link = node("a", "", "Sign in");
  link.href = "/signin/?next=" + encodeURIComponent("/tickets/");
  const p = node("p", "small");
  p.append(link, " with the email you paid with to see your tickets here and at My tickets.");
  box.append(p);
  box.hidden = false;
}

async function show() {
  if (!session.get()) { signInNote(); return; }
  const r = await api("GET", cfg.api + "events/" + cfg.event_id + "/me/");
  const claim = r.ok && r.data ? r.data.claim : null;
  if (!claim || claim.claim_id !== cfg.claim_id) { signInNote(); return; }
  const tickets = (r.data.tickets || []).filter((t) => t.status !== "void" && t.status !== "transferred" && t.status !== "resold");
  const list = node("ul", "paid-ticket-list");
  for (const t of tickets) {
    const item = node("li", "paid-ticket");
    item.dataset.code = t.code;
    const link = node("a", "code", t.code);
    link.href = t.url;
    item.append(
      link,
      node("span", "", " · " + t.tier_name + (t.seat_label ? " · seat " + t.seat_label : " · ticket " + t.seat + " of " + claim.quantity)),
    );
    list.append(item);
  }
  box.append(
    node("h2", "", tickets.length === 1 ? "Your ticket" : "Your " + tickets.length + " tickets"),
    list,
    node("p", "paid-total", "Total paid: " + money(claim.amount, claim.currency)),
    node("p", "small", "Open a ticket for its QR code; show it at the door. The same tickets are at My tickets and in your email."),
  );
  box.hidden = false;
}

if (box && cfg.claim_id) show();
