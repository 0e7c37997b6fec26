/* The time to choose, in the admitted panel: its warning when little is
   left (a role="alert" box, read out once when it appears) and its one
   extension on request (WCAG 2.2.1). The server answers the new end and a
   token that carries it; a second ask is 409 already_extended. `room`:
   {admission(), setAdmission(a), refresh(), redraw()}. */
import { api, errorText } from "../lib/api.js";
import { untilWords } from "./countdown.js";
import { chooseWarning } from "./machine.js";
import { announce, busy, el, setError, setText } from "./view.js";

const LABEL = "I need more time";

export class ChooseTime {
  constructor(cfg, room) {
    this.url = cfg.api + "events/" + cfg.event_id + "/queue/extend/";
    this.warnAt = cfg.choose_warning_seconds || 30;
    this.room = room;
    el("extend-button").addEventListener("click", () => this.extend());
  }

  /* `left`: seconds of the time to choose left, on the page's clock. */
  draw(left) {
    const admission = this.room.admission();
    const warning = admission ? chooseWarning(left, this.warnAt, admission.extendable) : null;
    const box = el("time-warning");
    if (!warning) { box.hidden = true; return; }
    if (box.hidden || el("time-warning-text").textContent !== warning.text) {
      setText("time-warning-text", warning.text);
      box.hidden = false;
    }
    el("extend-button").hidden = !warning.extend;
  }

  async extend() {
    const button = el("extend-button");
    setError("");
    busy(button, true, "Asking for more time…");
    const r = await api("POST", this.url);
    busy(button, false, LABEL);
    if (r.ok) {
      this.room.setAdmission(r.data);
      const left = this.room.admission().expiresAt - Date.now();
      announce("You have more time: choose your tickets within " + untilWords(left) + ".");
      this.room.redraw();
      return;
    }
    const code = r.error && r.error.code;
    if (code === "already_extended") {
      this.room.admission().extendable = false;
      this.room.redraw();
    } else if (r.status === 403 || r.status === 404 || code === "invalid_transition") {
      this.room.refresh();
    }
    setError(errorText(r));
  }
}
