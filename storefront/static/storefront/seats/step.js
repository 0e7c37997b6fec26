/* The seat picker in the waiting room's claim step (queue/main.js): which
   tier shows a map, what the claim asks for (the picked seats, else the best
   `quantity`), and the claim button's words. */
import { claimButtonText, labelList } from "./map.js";
import { SeatPicker } from "./picker.js";

const el = (id) => document.getElementById(id);

export class SeatStep {
  constructor(cfg) {
    this.picker = new SeatPicker({
      root: el("seat-picker"),
      apiBase: cfg.api,
      eventId: cfg.event_id,
      max: cfg.max_tickets_per_customer,
      onChange: () => this.label(),
      onMessage: (text) => { el("seat-error").textContent = text || ""; },
    });
  }

  quantity() { return parseInt(el("quantity").value, 10); }

  /* The checked tier changed (or the claim step opened): a reserved tier
     shows its map, a general one hides it. */
  chooseTier() {
    const tier = document.querySelector("#claim-form input[name=tier_id]:checked");
    if (tier && tier.getAttribute("data-kind") === "reserved") this.picker.show(tier.value);
    else this.picker.hide();
    this.label();
  }

  /* The claim button's words, and the number field: not needed while seats are picked. */
  label() {
    const picks = this.picker.active ? this.picker.picks : [];
    el("claim-button").textContent = this.picker.active
      ? claimButtonText(picks, this.quantity()) : "Hold these tickets";
    el("quantity").closest(".field").hidden = picks.length > 0;
  }

  /* The claim's body: the picked seats instead of a quantity. */
  body(body) {
    if (!this.picker.active || !this.picker.picks.length) return body;
    const seats = { admission_token: body.admission_token, tier_id: body.tier_id, seats: this.picker.picks.slice() };
    return seats;
  }

  onPush(message) { this.picker.applyPush(message); }

  /* 409 seats_unavailable: said beside the map (an alert), which is read again. */
  conflict(error) {
    const taken = (error && error.details && Array.isArray(error.details.seats)) ? error.details.seats : [];
    const text = this.picker.conflict(taken);
    el("seat-error").textContent = text;
    return text;
  }
}

/* The seats of a claim or a ticket, in words ("A-1 and A-2"), or "". */
export function seatsText(seats) {
  if (!Array.isArray(seats) || !seats.length) return "";
  return labelList(seats.map((s) => (typeof s === "string" ? s : s && s.label)).filter(Boolean));
}
