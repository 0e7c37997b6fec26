/* My tickets (/tickets/): every ticket of the signed-in customer, from GET me/tickets/. */
import { api, errorText, pageConfig, session } from "./lib/api.js";
import { localDateTime } from "./lib/format.js";

const cfg = pageConfig();
const el = (id) => document.getElementById(id);

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
  el("tickets-status").textContent = tickets.length
    ? tickets.length + (tickets.length === 1 ? " ticket." : " tickets.")
    : "No tickets yet. Tickets you buy appear here and in your email.";
  const list = el("ticket-list");
  list.textContent = "";
  tickets.forEach((t) => {
    const item = document.createElement("li");
    item.className = "ticket" + (t.status === "VALID" ? "" : " ticket-" + t.status.toLowerCase());
    const img = document.createElement("img");
    img.src = t.url + "qr.svg";
    img.alt = "QR code of ticket " + t.code;
    const body = document.createElement("div");
    const title = document.createElement("p");
    title.className = "ticket-title";
    title.textContent = t.event_name;
    const what = document.createElement("p");
    what.textContent = t.tier_name + (t.seat_label ? " · seat " + t.seat_label : " · ticket " + t.seat) + (t.starts_at ? " · " + localDateTime(t.starts_at) : "");
    const code = document.createElement("p");
    code.className = "code";
    code.textContent = t.code;
    const status = document.createElement("p");
    status.className = "small " + (t.status === "VALID" ? "ok-text" : "muted");
    status.textContent = t.status_text;
    const link = document.createElement("a");
    link.href = t.url;
    link.textContent = "Open or print";
    body.append(title, what, code, status, link);
    item.append(img, body);
    list.appendChild(item);
  });
}

session.onEnd(load);
load();
