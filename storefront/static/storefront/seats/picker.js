/* The seat picker of the waiting room's claim step: draws a reserved tier's
   seat map as SVG, lets the customer pick seats (click or tap; arrow keys
   move, Enter or Space picks), greys seats out live from the socket's
   ``seats`` deltas, and zooms on a small screen (the map scrolls in its box,
   so a finger pans it). The rules are in map.js; this file only draws. */
import { api } from "../lib/api.js";
import {
  applyDelta, conflictText, labelList, layout, neighbour, nextZoom, placed, rowLabels, seatWords,
  toggle,
} from "./map.js";

const SVG = "http://www.w3.org/2000/svg";

function svgEl(name, attrs) {
  const node = document.createElementNS(SVG, name);
  Object.keys(attrs || {}).forEach((k) => node.setAttribute(k, String(attrs[k])));
  return node;
}

export class SeatPicker {
  /* root: the picker's box (hidden for a general tier). onChange(picks) is
     called when the picks change; onMessage(text) tells the customer. */
  constructor({ root, apiBase, eventId, max, onChange, onMessage }) {
    Object.assign(this, { root, apiBase, eventId, max, onChange, onMessage });
    this.svg = root.querySelector("svg");
    this.scroller = root.querySelector(".seat-scroll");
    this.status = root.querySelector("[data-seat-picks]");
    this.tierId = null;
    this.seats = [];
    this.byLabel = new Map();
    this.nodes = new Map();
    this.version = null;
    this.picks = [];
    this.focused = null;
    this.zoom = 1;
    this.loading = null;
    this.svg.addEventListener("click", (e) => this.onClick(e));
    this.svg.addEventListener("keydown", (e) => this.onKey(e));
    root.querySelector("[data-zoom=in]").addEventListener("click", () => this.setZoom(nextZoom(this.zoom, 1)));
    root.querySelector("[data-zoom=out]").addEventListener("click", () => this.setZoom(nextZoom(this.zoom, -1)));
  }

  get active() { return this.tierId !== null; }

  hide() {
    this.root.hidden = true;
    this.tierId = null;
    this.setPicks([]);
  }

  /* Shows the tier's map (a new tier starts with no picks). */
  async show(tierId) {
    if (tierId !== this.tierId) {
      this.tierId = tierId;
      this.picks = [];
      this.seats = [];
      this.svg.textContent = "";
    }
    this.root.hidden = false;
    await this.reload();
    this.setPicks(this.picks);
  }

  /* The map as it is now (after a conflict, when the socket comes back). */
  async reload() {
    const tierId = this.tierId;
    if (!tierId) return;
    const url = this.apiBase + "events/" + this.eventId + "/tiers/" + tierId + "/seats/";
    const r = await api("GET", url);
    if (tierId !== this.tierId) return;  // the customer chose another tier meanwhile
    if (!r.ok || !r.data || !Array.isArray(r.data.seats)) {
      if (!this.seats.length) this.onMessage("The seat map could not be loaded. Try again, or ask for the best seats available.");
      return;
    }
    this.version = typeof r.data.version === "number" ? r.data.version : null;
    const fresh = r.data.seats;
    if (this.sameSeats(fresh)) {
      fresh.forEach((s) => { this.byLabel.get(s.label).status = s.status; });
      this.seats.forEach((s) => this.paint(s));
    } else {
      this.draw(fresh);
    }
    const gone = this.picks.filter((l) => !this.byLabel.has(l) || this.byLabel.get(l).status !== "available");
    if (gone.length) this.setPicks(this.picks.filter((l) => gone.indexOf(l) === -1));
  }

  sameSeats(fresh) {
    return fresh.length === this.seats.length && fresh.every((s) => this.byLabel.has(s.label));
  }

  draw(raw) {
    // In units of the seat spacing, whatever units x/y came in: strokes and
    // type (seats.css) are sized in those units.
    const seats = placed(raw);
    const unit = layout(seats).gap || 1;
    this.seats = seats.map((s) => Object.assign({}, s, { x: s.x / unit, y: s.y / unit }));
    this.byLabel = new Map(this.seats.map((s) => [s.label, s]));
    this.nodes = new Map();
    const frame = layout(this.seats);
    const svg = this.svg;
    svg.textContent = "";
    svg.setAttribute("viewBox", frame.viewBox.join(" "));
    const fontSize = frame.gap * 0.6;
    const stage = svgEl("rect", {
      x: frame.minX, y: frame.stageY - frame.gap * 0.5, width: Math.max(frame.maxX - frame.minX, frame.gap),
      height: frame.gap, rx: frame.gap * 0.3, class: "seat-stage",
    });
    const stageText = svgEl("text", {
      x: (frame.minX + frame.maxX) / 2, y: frame.stageY + fontSize * 0.35, "font-size": fontSize,
      "text-anchor": "middle", class: "seat-stage-text",
    });
    stageText.textContent = "STAGE";
    svg.append(stage, stageText);
    rowLabels(this.seats).forEach((row) => {
      [row.x0 - frame.gap * 1.05, row.x1 + frame.gap * 1.05].forEach((x) => {
        const t = svgEl("text", {
          x, y: row.y + fontSize * 0.35, "font-size": fontSize, "text-anchor": "middle",
          class: "seat-row", "aria-hidden": "true",
        });
        t.textContent = row.row;
        svg.appendChild(t);
      });
    });
    this.seats.forEach((seat) => {
      const node = svgEl("circle", {
        cx: seat.x, cy: seat.y, r: frame.r, role: "checkbox", tabindex: "-1", "data-label": seat.label,
      });
      const title = svgEl("title");
      node.appendChild(title);
      this.nodes.set(seat.label, node);
      svg.appendChild(node);
      this.paint(seat);
    });
    const first = this.seats.find((s) => s.status === "available") || this.seats[0];
    this.focused = first ? first.label : null;
    if (first) this.nodes.get(first.label).setAttribute("tabindex", "0");
    this.setZoom(this.zoom);
  }

  paint(seat) {
    const node = this.nodes.get(seat.label);
    if (!node) return;
    const picked = this.picks.indexOf(seat.label) !== -1;
    let cls = "seat seat-" + seat.status + (picked ? " seat-picked" : "");
    if (seat.accessible) cls += " seat-accessible";
    if (seat.restricted_view) cls += " seat-restricted";
    node.setAttribute("class", cls);
    node.setAttribute("aria-checked", picked ? "true" : "false");
    node.setAttribute("aria-disabled", seat.status === "available" || picked ? "false" : "true");
    const words = seatWords(seat, picked);
    node.setAttribute("aria-label", words);
    node.firstChild.textContent = words;
  }

  setPicks(picks) {
    const before = this.picks;
    this.picks = picks;
    before.concat(picks).forEach((l) => { if (this.byLabel.has(l)) this.paint(this.byLabel.get(l)); });
    if (this.status) {
      this.status.textContent = picks.length
        ? "Your seats: " + labelList(picks) + "."
        : "No seats picked: we choose the best ones for you.";
    }
    this.onChange(picks);
  }

  pick(label) {
    const seat = this.byLabel.get(label);
    if (!seat) return;
    const result = toggle(this.picks, seat, this.max);
    this.onMessage(result.reason);
    if (result.picks !== this.picks) this.setPicks(result.picks);
  }

  onClick(e) {
    const node = e.target.closest && e.target.closest("circle[data-label]");
    if (!node) return;
    this.moveFocus(node.getAttribute("data-label"), false);
    this.pick(node.getAttribute("data-label"));
  }

  onKey(e) {
    const current = this.byLabel.get(this.focused);
    if (!current) return;
    if (e.key === "Enter" || e.key === " " || e.key === "Spacebar") {
      e.preventDefault();
      this.pick(current.label);
      return;
    }
    const next = neighbour(this.seats, current, e.key);
    if (next !== current || e.key.indexOf("Arrow") === 0) e.preventDefault();
    if (next && next !== current) this.moveFocus(next.label, true);
  }

  moveFocus(label, focus) {
    const old = this.nodes.get(this.focused);
    if (old) old.setAttribute("tabindex", "-1");
    const node = this.nodes.get(label);
    if (!node) return;
    this.focused = label;
    node.setAttribute("tabindex", "0");
    if (focus) {
      node.focus();
      if (this.zoom > 1 && node.scrollIntoView) node.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  }

  setZoom(zoom) {
    const box = this.scroller;
    const cx = (box.scrollLeft + box.clientWidth / 2) / (box.scrollWidth || 1);
    const cy = (box.scrollTop + box.clientHeight / 2) / (box.scrollHeight || 1);
    this.zoom = zoom;
    this.svg.style.width = zoom * 100 + "%";
    this.root.querySelector("[data-zoom=in]").disabled = zoom >= 3.5;
    this.root.querySelector("[data-zoom=out]").disabled = zoom <= 1;
    // Keep what was in the middle in the middle.
    box.scrollLeft = cx * box.scrollWidth - box.clientWidth / 2;
    box.scrollTop = cy * box.scrollHeight - box.clientHeight / 2;
  }

  /* A ``seats`` push from the socket. */
  applyPush(message) {
    if (!this.active || !message || message.tier_id !== this.tierId) return;
    const result = applyDelta(this.byLabel, this.version, message, this.picks);
    result.changed.forEach((l) => this.paint(this.byLabel.get(l)));
    if (result.reload && !this.reloadTimer) {
      this.reloadTimer = window.setTimeout(() => { this.reloadTimer = null; this.reload(); }, 500);
    }
    if (result.lost.length) {
      this.setPicks(this.picks.filter((l) => result.lost.indexOf(l) === -1));
      this.onMessage((result.lost.length === 1 ? "Seat " : "Seats ") + labelList(result.lost)
        + " just went to someone else. Pick another.");
    }
  }

  /* A 409 seats_unavailable: the taken seats grey out, leave the picks, and
     the map is read again. Returns the text to show. */
  conflict(taken) {
    taken.forEach((l) => {
      const seat = this.byLabel.get(l);
      if (seat && seat.status === "available") { seat.status = "held"; this.paint(seat); }
    });
    this.setPicks(this.picks.filter((l) => taken.indexOf(l) === -1));
    this.reload();
    const node = this.nodes.get(this.focused);
    if (node) node.focus();  // back on the map, where the alert is
    return conflictText(taken);
  }
}
