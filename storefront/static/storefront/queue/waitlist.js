/* The waiting list on the waiting-room page: shown once the event is sold
   out, after the sale while returns are open (returned tickets still go to
   the list), or when the customer is on its list. Join it (for one tier or any),
   see your place, leave it. When a ticket comes back for you, the offer is
   an admission: the page reloads and the usual "It is your turn" step
   takes over, set to the one ticket of the tier offered. Asks for its own
   state (GET events/{id}/waitlist/) every POLL_MS while waiting. */
import { api, errorText, pageConfig, session } from "../lib/api.js";
import { localDateTime, number } from "../lib/format.js";

const POLL_MS = 15000;
const SHOW_WITHIN_MS = 3000;  // the page's own read of its admission, before a reload
const cfg = pageConfig();
const PATH = cfg.api + "events/" + cfg.event_id + "/waitlist/";
const box = document.getElementById("waitlist");
// Where a returned ticket goes: the list, not the line.
const LIST_OPEN = cfg.status === "SOLD_OUT" || cfg.waitlist_after_sale;
let timer = null;

function show(part) {
  for (const node of box.querySelectorAll("[data-waitlist]")) {
    node.hidden = node.dataset.waitlist !== part;
  }
  box.hidden = false;
}

function setText(id, text) { document.getElementById(id).textContent = text; }

function onList(on) {
  // The line's own join and waiting panels step aside while on the list (or
  // while a sold-out event offers it).
  document.getElementById("room").classList.toggle("on-waitlist", on);
}

/* The offer: the claim form keeps the tier offered only, one ticket. */
function narrowClaim(entry) {
  for (const input of document.querySelectorAll("#claim-form input[name=tier_id]")) {
    const offered = input.value === entry.offer_tier_id;
    input.closest("label").hidden = !offered;
    if (offered) input.checked = true;
  }
  const quantity = document.getElementById("quantity");
  if (quantity) { quantity.value = "1"; quantity.disabled = true; }
}

function render(entry) {
  clearTimeout(timer);
  if (!entry || ["left", "closed", "lapsed", "accepted"].includes(entry.status)) {
    onList(false);
    if (entry && entry.status === "lapsed") setText("waitlist-note", "Your offer passed to the next person. You can join the list again.");
    else if (entry && entry.status === "closed") setText("waitlist-note", "The sale ended before a ticket came back.");
    else setText("waitlist-note", "");
    if (entry && entry.status === "accepted") { box.hidden = true; return; }
    if (LIST_OPEN || (entry && entry.status !== "closed")) {
      show("join");
      onList(LIST_OPEN);
    } else box.hidden = true;
    return;
  }
  onList(true);
  if (entry.status === "offered") {
    show("offered");
    setText("waitlist-offer-until", localDateTime(entry.offer_expires_at));
    if (!document.querySelector("[data-panel=admitted]:not([hidden])")) {
      // The admission is the page's to show, once its own read answers (the
      // observer below then reads the entry again). A page that read its
      // state before the offer never shows it: reload, once per offer, so
      // a page whose read is merely slower than this one cannot loop.
      timer = setTimeout(() => reloadOnce(entry), SHOW_WITHIN_MS);
      return;
    }
    narrowClaim(entry);
    return;
  }
  show("waiting");
  if (entry.position === null) {
    setText("waitlist-place", "Drawn soon");
    setText("waitlist-ahead", "Everyone who joined in the first minute after the sell-out gets a random place at " + localDateTime(entry.draw_at) + ".");
  } else {
    setText("waitlist-place", number(entry.position));
    setText("waitlist-ahead", entry.position === 1 ? "You are next: the next ticket that comes back is yours." : number(entry.position - 1) + " ahead of you on the waiting list.");
  }
  timer = setTimeout(load, POLL_MS);
}

function reloadOnce(entry) {
  const key = "fq-offer-reload:" + cfg.event_id + ":" + entry.offer_expires_at;
  if (document.querySelector("[data-panel=admitted]:not([hidden])")) return;
  if (window.sessionStorage.getItem(key)) return;
  window.sessionStorage.setItem(key, "1");
  window.location.reload();
}

async function load() {
  if (!session.get()) { if (LIST_OPEN) show("signin"); return; }
  const r = await api("GET", PATH);
  if (r.ok) render(r.data);
  else if (r.status === 404) render(null);
}

async function join() {
  const button = document.getElementById("waitlist-join");
  button.disabled = true;
  const tier = document.getElementById("waitlist-tier").value;
  const r = await api("POST", PATH, { body: { tier_id: tier || null } });
  button.disabled = false;
  setText("waitlist-error", r.ok ? "" : errorText(r));
  if (r.ok) render(r.data);
}

async function leave() {
  const r = await api("DELETE", PATH);
  setText("waitlist-error", r.ok ? "" : errorText(r));
  if (r.ok) render({ status: "left" });
}

if (box) {
  document.getElementById("waitlist-join").addEventListener("click", join);
  document.getElementById("waitlist-leave").addEventListener("click", leave);
  // Admitted when nothing was left: the server put us first on the list.
  document.addEventListener("fq:waitlist", () => load());
  // An offer can come after the list was read: when the page shows its
  // admission while on the list, the entry is read at once for the offer.
  const admitted = document.querySelector("[data-panel=admitted]");
  if (admitted) {
    new MutationObserver(() => {
      if (!admitted.hidden && document.getElementById("room").classList.contains("on-waitlist")) load();
    }).observe(admitted, { attributes: true, attributeFilter: ["hidden"] });
  }
  load();
}
