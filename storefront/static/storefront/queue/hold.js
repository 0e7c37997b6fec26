/* The held tickets (the claim and paying panels): drawing the hold and its
   payment, paying (a new payment after a declined one: "Try again"), and
   releasing. `room` gives the customer's state (GET me/) and asks for it
   again: {me(), refresh()}. */
import { api, errorText, newKey } from "../lib/api.js";
import { money } from "../lib/format.js";
import { seatsText } from "../seats/step.js";
import { busy, el, setError, setNotice, setText } from "./view.js";

const GONE = ["already_paid", "claim_expired", "claim_not_payable", "claim_not_found", "payment_refused"];

export class HoldPanel {
  constructor(api_base, room) {
    this.base = api_base;
    this.room = room;
    el("pay-button").addEventListener("click", () => this.pay(null, 0));
    el("release-button").addEventListener("click", () => this.release());
  }

  claim() {
    const me = this.room.me();
    return me && me.claim;
  }

  /* "Try again" once an attempt failed: the hold is still there. */
  payLabel() {
    const me = this.room.me();
    return me && me.payment && me.payment.status === "FAILED" ? "Try again" : "Pay";
  }

  draw() {
    const c = this.claim();
    if (!c) return;
    setText("claim-tier", c.tier_name);
    const seatWords = seatsText(c.seats);
    setText("claim-quantity", String(c.quantity) + (seatWords ? " · seats " + seatWords : ""));
    setText("claim-amount", money(c.amount, c.currency));
    const p = this.room.me().payment;
    setText("paying-status", p ? p.status_text + "." : "");
    const resume = el("resume-payment");
    resume.hidden = !(p && p.authorization_url);
    if (p && p.authorization_url) resume.href = p.authorization_url;
    busy(el("pay-button"), false, this.payLabel());
    el("release-button").disabled = false;
  }

  /* The hold ran out on the page's clock: the server decides what follows. */
  lapse() {
    el("pay-button").disabled = true;
  }

  async pay(attemptKey, attempt) {
    const c = this.claim();
    if (!c) return;
    const button = el("pay-button");
    // One key per click; an automatic retry of the same click reuses it. The
    // API keeps one live payment per claim, so a second click cannot pay twice.
    const key = attemptKey || newKey();
    setError("");
    busy(button, true, "Starting payment…");
    const r = await api("POST", this.base + "claims/" + c.claim_id + "/payments/", { body: {}, idempotencyKey: key });
    if (r.ok && r.data.authorization_url) {
      button.textContent = "Opening checkout…";
      window.location.assign(r.data.authorization_url);
      return;
    }
    const code = r.error && r.error.code;
    if (!r.ok && (r.status === 503 || code === "idempotency_in_progress") && attempt < 3) {
      window.setTimeout(() => this.pay(key, attempt + 1), (r.retryAfter || 2) * 1000);
      return;
    }
    busy(button, false, this.payLabel());
    if (r.ok) { setError("The payment is still being set up. Try again in a few seconds."); return; }
    if (GONE.indexOf(code) !== -1) {
      await this.room.refresh();
      setNotice(r.error.message);
      return;
    }
    setError(errorText(r));
  }

  async release() {
    const c = this.claim();
    if (!c) return;
    if (!window.confirm("Release your tickets? They go back on sale and you lose your hold.")) return;
    const button = el("release-button");
    setError("");
    busy(button, true, "Releasing…");
    const r = await api("DELETE", this.base + "claims/" + c.claim_id + "/");
    busy(button, false, "Release tickets");
    if (r.ok || (r.error && r.error.code === "invalid_transition")) { await this.room.refresh(); return; }
    setError(errorText(r));
  }
}
