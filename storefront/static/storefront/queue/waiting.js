/* The waiting panel: the place in line, the progress bar, the estimated wait
   and the screen reader's milestones. What it keeps per queue entry (the
   starting place, the estimate last shown) lives in storage, so a refresh
   or another tab goes on from where the page was instead of starting over. */
import { store } from "../lib/api.js";
import { number } from "../lib/format.js";
import { etaRange, etaText, steadyRange } from "./eta.js";
import { etaSince, placeIn } from "./line.js";
import { aheadText, progress, startingPlace } from "./position.js";
import { announce, setProgress, setText } from "./view.js";

const SAVE_EVERY_MS = 5000;

export class WaitingPanel {
  constructor(cfg) {
    this.cfg = cfg;
    this.entry = null;        // the queue entry the stored values belong to
    this.start = null;        // the starting place the progress bar counts from
    this.eta = null;          // the estimate shown last: {low, high, at}
    this.savedAt = 0;
    this.lastAnnounced = null;
  }

  /* Our number arrived (join, snapshot, GET me/) for queue entry `entryId`. */
  track(entryId, position) {
    const key = entryId || this.cfg.event_id;
    if (key !== this.entry) {
      this.entry = key;
      this.eta = store.get("fq.eta." + key);
    }
    this.start = startingPlace(store.get("fq.start." + key), position);
    store.set("fq.start." + key, this.start);
  }

  /* Draw the panel at `now` for `number` placed in the line state `line`;
     `event`: {status, sale_start}. */
  draw(number_, line, event, now) {
    const where = placeIn(number_, line);
    const position = where.place !== null ? where.place : (number_ ? number_.position : null);
    setText("position", typeof position === "number" ? number(position) : "–");
    setText("ahead", aheadText(position));
    setProgress(progress(this.start, position));
    setText("eta", this.etaWords(position, where, line, event, now));
    // Milestones only: a screen reader is not read every step of the line.
    if (typeof position === "number" && position !== this.lastAnnounced
        && (position <= 10 || position % 100 === 0 || this.lastAnnounced === null)) {
      this.lastAnnounced = position;
      announce("Your place in line: " + number(position) + ". " + aheadText(position));
    }
  }

  etaWords(position, where, line, event, now) {
    if (event.status === "PAUSED") return "Paused: no estimate until admission resumes.";
    if (event.status === "SOLD_OUT") {
      return "No estimate: you move forward only if tickets come back. This page checks about once a minute.";
    }
    if (where.admitted) return "It is your turn: getting your place…";
    const waitBeforeStart = Math.max(0, (Date.parse(event.sale_start) - now) / 1000);
    // The range as of the last line state, counting down since it was written.
    const range = etaRange({
      position, ratePerSecond: line ? line.rate_per_second : null,
      batchSize: this.cfg.admission_batch_size, intervalSeconds: this.cfg.admission_interval_seconds,
      waitBeforeStart,
    });
    const fresh = line && !waitBeforeStart ? etaSince(range, line, now) : range;
    this.eta = steadyRange(this.eta, fresh, now);
    if (this.entry && now - this.savedAt >= SAVE_EVERY_MS) {
      this.savedAt = now;
      store.set("fq.eta." + this.entry, this.eta);
    }
    return etaText(this.eta);
  }
}
