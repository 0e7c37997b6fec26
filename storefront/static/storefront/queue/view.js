/* Drawing the waiting room: panels, notices, the live marker, the screen
   reader's live region. No decisions here (machine.js makes them). */
import { EVENT_NOTICE, SALE_BADGE } from "./machine.js";

export const el = (id) => document.getElementById(id);

export function showPanel(phase) {
  document.querySelectorAll("#room [data-panel]").forEach((panel) => {
    panel.hidden = panel.getAttribute("data-panel") !== phase;
  });
}

export function setText(id, text) {
  const node = el(id);
  if (node && node.textContent !== text) node.textContent = text;
}

/* The polite live region: screen readers read it when it changes. */
export function announce(message) {
  const node = el("announce");
  if (!node || !message) return;
  // The same words twice in a row are not re-read: blank it first.
  if (node.textContent === message) node.textContent = "";
  window.setTimeout(() => { node.textContent = message; }, 50);
}

export function setError(message) { setText("room-error", message || ""); }
export function setNotice(message) { setText("room-notice", message || ""); }

export function setLive(on) {
  const node = el("live");
  if (!node) return;
  node.className = on ? "live on" : "live off";
  node.textContent = on
    ? "Live: this page updates by itself."
    : "Reconnecting… Your place is kept; we check every few seconds.";
}

export function setEventStatus(status, saleState) {
  const badge = SALE_BADGE[saleState];
  if (badge) {
    const node = el("sale-badge");
    node.className = "badge badge-" + badge[0];
    node.textContent = badge[1];
  }
  setText("event-notice", EVENT_NOTICE[status] || "");
}

/* The offer of the tickets that are left (machine.js fewerLeftOffer), or none.
   While it shows, it is the one primary button: the form's own is secondary. */
export function showOffer(offer) {
  el("fewer-left").hidden = !offer;
  el("claim-button").classList.toggle("secondary", Boolean(offer));
  if (!offer) return;
  setText("fewer-left-text", offer.text);
  setText("fewer-left-button", offer.button);
}

export function busy(button, on, text) {
  button.disabled = on;
  if (text) button.textContent = text;
}

export function setProgress(fraction) {
  const percent = Math.round(fraction * 100);
  const bar = el("progress-bar");
  bar.setAttribute("aria-valuenow", String(percent));
  bar.setAttribute("aria-valuetext", percent + "% of the way to the front");
  el("progress-fill").style.width = percent + "%";
}

/* The confirmed panel's tickets: QR code, code, tier, seat, status. */
export function renderTickets(tickets) {
  const list = el("ticket-list");
  list.textContent = "";
  tickets.forEach((t) => {
    const item = document.createElement("li");
    item.className = "ticket" + (t.status === "VALID" ? "" : " ticket-" + t.status.toLowerCase());
    const img = document.createElement("img");
    img.src = t.url + "qr.svg";
    img.alt = "QR code of ticket " + t.code;
    img.width = 168;
    img.height = 168;
    const body = document.createElement("div");
    const title = document.createElement("p");
    title.className = "ticket-title";
    title.textContent = t.tier_name + (t.seat_label ? " · seat " + t.seat_label : " · ticket " + t.seat);
    const code = document.createElement("p");
    code.className = "code";
    code.textContent = t.code;
    const status = document.createElement("p");
    status.className = "small " + (t.status === "VALID" ? "ok-text" : "muted");
    status.textContent = t.status_text;
    const link = document.createElement("a");
    link.href = t.url;
    link.textContent = "Open or print";
    body.append(title, code, status, link);
    item.append(img, body);
    list.appendChild(item);
  });
}
