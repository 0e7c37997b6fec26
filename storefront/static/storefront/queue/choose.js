/* Choosing tickets in the admitted panel: the claim request (retried with
   the same Idempotency-Key while its answer is lost or the server is busy),
   and the offer of the tickets that are left when fewer are than asked
   for. `room`: {admission(), admitted(), refresh(), refreshEvent()}. */
import { api, errorText, newKey } from "../lib/api.js";
import { fewerLeftOffer } from "./machine.js";
import { busy, el, setError, setNotice, showOffer } from "./view.js";

const REFRESH_ON = ["already_claimed", "admission_expired", "admission_invalid"];

export class ChooseStep {
  constructor(cfg, seats, room) {
    this.url = cfg.api + "events/" + cfg.event_id + "/claims/";
    this.seats = seats;
    this.room = room;
    this.pending = null;  // {text, key}: a retry of the same request reuses its key
    this.offer = null;    // fewer tickets left than asked for: {quantity, text, button}
    el("claim-form").addEventListener("submit", (e) => this.submit(e));
    el("fewer-left-button").addEventListener("click", () => this.takeOffer());
    el("claim-form").addEventListener("change", (e) => {
      if (e.target.name === "tier_id") seats.chooseTier(); else seats.label();
    });
  }

  submit(e) {
    e.preventDefault();
    const admission = this.room.admission();
    if (!admission) return;
    this.offer = null;
    showOffer(null);
    const tier = document.querySelector("#claim-form input[name=tier_id]:checked");
    if (!tier) { setError("Choose a ticket tier."); return; }
    const body = this.seats.body({
      admission_token: admission.token,
      tier_id: tier.value,
      quantity: parseInt(el("quantity").value, 10),
    });
    const text = JSON.stringify(body);
    if (!this.pending || this.pending.text !== text) this.pending = { text, key: newKey() };
    this.send(body, 0);
  }

  async send(body, attempt) {
    const button = el("claim-button");
    setError("");
    busy(button, true, attempt ? "Busy, trying again…" : "Holding…");
    const r = await api("POST", this.url, { body, idempotencyKey: this.pending.key });
    const code = r.error && r.error.code;
    const retryable = r.status === 503 || code === "claim_in_progress" || code === "idempotency_in_progress";
    if (!r.ok && retryable && attempt < 3) {
      window.setTimeout(() => this.send(body, attempt + 1), (r.retryAfter || 1) * 1000);
      return;
    }
    busy(button, false);
    this.seats.label();
    // Only a lost answer (network, 5xx) may be replayed with the same key.
    if (r.ok || (r.status !== 0 && r.status < 500)) this.pending = null;
    if (r.ok || REFRESH_ON.indexOf(code) !== -1) {
      await this.room.refresh();
      if (!r.ok && code !== "already_claimed") setNotice(r.error.message);
      return;
    }
    if (code === "seats_unavailable") {  // said beside the map, which reloads
      this.seats.conflict(r.error);
      this.room.refreshEvent();
      return;
    }
    if (code === "sold_out") {
      // Nothing left at all: the server ended the admission and put us first
      // on the waiting list (the page says so). Else another tier may have some.
      await this.room.refresh();
      if (!this.room.admitted()) return;
      setError("Those tickets just sold out. Choose another tier if one is left.");
      this.room.refreshEvent();
      return;
    }
    this.offer = code === "not_enough_tickets" ? fewerLeftOffer(r.error) : null;
    if (this.offer) {
      showOffer(this.offer);
      this.room.refreshEvent();
      return;
    }
    setError(errorText(r));
  }

  /* The customer takes the tickets that are left: the same form, that many. */
  takeOffer() {
    if (!this.offer) return;
    el("quantity").value = String(this.offer.quantity);
    el("claim-form").requestSubmit();
  }
}
