/* The door (/events/{id}/check-in/): POST events/{id}/tickets/check-in/ with
   the organizer's admin session (the cookie) and its CSRF token. */
import { pageConfig } from "./lib/api.js";
import { localDateTime } from "./lib/format.js";

const cfg = pageConfig();
const el = (id) => document.getElementById(id);

function show(verdict, detail, ok) {
  const box = el("checkin-result");
  box.hidden = false;
  box.className = "panel " + (ok ? "notice ok" : "error");
  el("checkin-verdict").textContent = verdict;
  el("checkin-detail").textContent = detail;
}

async function checkIn(e) {
  e.preventDefault();
  const input = el("code");
  const code = input.value.trim();
  if (!code) return;
  const button = el("checkin-button");
  button.disabled = true;
  let response, body = null;
  try {
    response = await fetch(cfg.api + "events/" + cfg.event_id + "/tickets/check-in/", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": cfg.csrf_token, "Accept": "application/json" },
      body: JSON.stringify({ code }),
    });
    body = await response.json().catch(() => null);
  } catch (err) {
    show("No connection", "Could not reach FairQueue. Try again.", false);
    button.disabled = false;
    return;
  }
  button.disabled = false;
  input.value = "";
  input.focus();
  if (response.ok) {
    // A reserved seat is what the usher needs; general admission: the ticket's number.
    const which = body.seat_label ? "seat " + body.seat_label : "ticket " + body.seat;
    show("Welcome in", body.tier + " · " + which + " · " + body.holder_email, true);
    return;
  }
  const error = (body && body.error) || { code: "", message: "Something went wrong." };
  const details = error.details || {};
  if (error.code === "ticket_already_used") {
    show("Already used", "Checked in " + localDateTime(details.checked_in_at) + (details.checked_in_by ? " by " + details.checked_in_by.replace(/^staff:/, "") : "") + ".", false);
  } else if (error.code === "ticket_void") {
    show("Void", "This ticket was cancelled (refunded or released). Do not let it in.", false);
  } else if (error.code === "ticket_not_found") {
    show("Not a ticket", "No ticket has this code. Check it was typed right.", false);
  } else {
    show("Not accepted", error.message, false);
  }
}

el("checkin-form").addEventListener("submit", checkIn);
