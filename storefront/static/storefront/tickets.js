/* My tickets (/tickets/): every ticket of the signed-in customer, from GET me/tickets/,
   with what the holder may do with each: return it for resale at face value (the fee
   and the refund shown before confirming), withdraw a return nobody has taken, send it
   to someone by email; and the tickets sent to them, to accept. */
import { api, errorText, pageConfig, session } from "./lib/api.js";
import { localDateTime, money } from "./lib/format.js";

const cfg = pageConfig();
const el = (id) => document.getElementById(id);

function node(tag, className, text) {
  const n = document.createElement(tag);
  if (className) n.className = className;
  if (text !== undefined) n.textContent = text;
  return n;
}

function button(label, onClick, secondary) {
  const b = node("button", secondary ? "secondary" : "", label);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

/* One call that changes a ticket, then the list again; a refusal is shown in the ticket. */
async function act(box, method, path, body) {
  box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  const r = await api(method, cfg.api + path, body === undefined ? {} : { body });
  if (!r.ok) {
    box.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    box.querySelector(".ticket-error").textContent = errorText(r);
    return;
  }
  load();
}

function codeOf(t) { return t.code.replace(/-/g, ""); }

async function askReturn(t, box) {
  const panel = box.querySelector(".ticket-panel");
  panel.textContent = "";
  const r = await api("GET", cfg.api + "tickets/" + codeOf(t) + "/return/");
  if (!r.ok) { box.querySelector(".ticket-error").textContent = errorText(r); return; }
  const q = r.data;
  const text = "If someone buys it, you get " + money(q.refund_amount, q.currency) + " back (" +
    money(q.face_value, q.currency) + " face value" +
    (q.fee ? ", minus a " + money(q.fee, q.currency) + " fee the organizer keeps" : "") +
    "). Until then it stays yours, but the door refuses it while it is on resale.";
  panel.append(
    node("p", "small", text),
    button("Confirm return", () => act(box, "POST", "tickets/" + codeOf(t) + "/return/")),
    button("Keep it", () => { panel.textContent = ""; }, true),
  );
}

function askTransfer(t, box) {
  const panel = box.querySelector(".ticket-panel");
  panel.textContent = "";
  const label = node("label", "small", "Their email address");
  const input = node("input");
  input.type = "email";
  input.name = "transfer-email";
  input.autocomplete = "off";
  label.append(input);
  panel.append(
    label,
    button("Send ticket", () => act(box, "POST", "tickets/" + codeOf(t) + "/transfer/", { email: input.value.trim() })),
    button("Cancel", () => { panel.textContent = ""; }, true),
  );
  input.focus();
}

function actions(t, box) {
  const row = node("div", "actions ticket-actions");
  if (t.can_return) row.append(button("Return for resale", () => askReturn(t, box), true));
  if (t.status === "on_resale") {
    row.append(button("Withdraw return", () => act(box, "DELETE", "tickets/" + codeOf(t) + "/return/"), true));
  }
  if (t.can_transfer) row.append(button("Send to someone", () => askTransfer(t, box), true));
  if (t.transfer) {
    box.querySelector(".ticket-note").textContent = "Sent to " + t.transfer.to_email + ": waiting for them to accept.";
    row.append(button("Cancel transfer", () => act(box, "DELETE", "transfers/" + t.transfer.transfer_id + "/"), true));
  }
  return row;
}

function note(t) {
  // Why there is no "Return for resale" (a ticket you were sent, returns closed).
  if (t.status === "valid" && t.return_refusal) return t.return_refusal;
  if (t.status === "on_resale" && t.resale) {
    return "On resale: you get " + money(t.resale.refund_amount, t.resale.currency) + " back if someone buys it.";
  }
  if (t.status === "resold" && t.refund) {
    const amount = "Refund of " + money(t.refund.amount, t.refund.currency);
    if (t.refund.status === "processed") return amount + ": paid back to your card.";
    if (t.refund.status === "failed") {
      return amount + ": delayed, your card did not take it. Our team has been told and will send it again; nothing for you to do.";
    }
    return amount + ": on its way to your card.";
  }
  return "";
}

function ticketItem(t) {
  const item = node("li", "ticket" + (t.status === "valid" ? "" : " ticket-" + t.status));
  item.dataset.code = codeOf(t);
  const img = node("img");
  img.src = t.url + "qr.svg";
  img.alt = "QR code of ticket " + t.code;
  const body = node("div");
  const what = t.tier_name + (t.seat_label ? " · seat " + t.seat_label : " · ticket " + t.seat) + (t.starts_at ? " · " + localDateTime(t.starts_at) : "");
  const link = node("a", "", "Open or print");
  link.href = t.url;
  body.append(
    node("p", "ticket-title", t.event_name),
    node("p", "", what),
    node("p", "code", t.code),
    node("p", "small ticket-status " + (t.status === "valid" ? "ok-text" : "muted"), t.status_text),
    node("p", "small ticket-note", note(t)),
    link,
  );
  body.append(actions(t, body), node("div", "ticket-panel"), node("p", "error ticket-error"));
  item.append(img, body);
  return item;
}

function incomingItem(x) {
  const item = node("li", "ticket incoming");
  const body = node("div");
  body.append(
    node("p", "ticket-title", x.event_name),
    node("p", "", x.tier_name + (x.seat_label ? " · seat " + x.seat_label : "") + " · from " + x.from_email),
  );
  const row = node("div", "actions ticket-actions");
  row.append(button("Accept ticket", () => act(body, "POST", "transfers/" + x.transfer_id + "/accept/")));
  body.append(row, node("div", "ticket-panel"), node("p", "error ticket-error"));
  item.append(body);
  return item;
}

async function load() {
  if (!session.get()) {
    el("tickets-status").textContent = "";
    el("tickets-signin").hidden = false;
    return;
  }
  const r = await api("GET", cfg.api + "me/tickets/");
  if (!r.ok) {
    el("tickets-status").textContent = "";
    if (r.status === 401) el("tickets-signin").hidden = false;
    else el("tickets-error").textContent = errorText(r);
    return;
  }
  const tickets = r.data.results;
  const incoming = r.data.incoming_transfers || [];
  el("tickets-status").textContent = tickets.length
    ? tickets.length + (tickets.length === 1 ? " ticket." : " tickets.")
    : "No tickets yet. Tickets you buy appear here and in your email.";
  el("incoming").hidden = !incoming.length;
  el("incoming-list").replaceChildren(...incoming.map(incomingItem));
  el("ticket-list").replaceChildren(...tickets.map(ticketItem));
}

session.onEnd(load);
load();
