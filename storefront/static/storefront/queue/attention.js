/* "Your turn!" for a customer looking elsewhere: the tab's title changes and
   flashes until the tab is looked at, a short sound plays and the phone
   vibrates where the browser allows it, and a notification shows if the
   customer allowed them (the waiting panel offers to ask). */

const FLASH_MS = 1000;

/* The titles the tab alternates between while it is not looked at. Pure. */
export function turnTitles(title) {
  return ["Your turn! \u00b7 " + title, "\u23f0 Choose your tickets \u00b7 " + title];
}

export class Attention {
  constructor({ document: doc = window.document, win = window } = {}) {
    this.doc = doc;
    this.win = win;
    this.title = doc.title;
    this.flasher = null;
    this.audio = null;
    // Browsers let a page make sound only after the customer touched it:
    // the first tap or key readies the sound for later.
    const ready = () => { this.audio = this.audio || this.newAudio(); };
    doc.addEventListener("pointerdown", ready, { once: true, capture: true });
    doc.addEventListener("keydown", ready, { once: true, capture: true });
    doc.addEventListener("visibilitychange", () => { if (!doc.hidden) this.stopFlashing(); });
  }

  newAudio() {
    const Context = this.win.AudioContext || this.win.webkitAudioContext;
    try { return Context ? new Context() : null; } catch (e) { return null; }
  }

  /* Our turn came: say so everywhere the customer may be looking. */
  call({ body }) {
    const titles = turnTitles(this.title);
    this.doc.title = titles[0];
    if (this.doc.hidden) this.flash(titles);
    this.beep();
    try { if (this.win.navigator.vibrate) this.win.navigator.vibrate([200, 100, 200]); } catch (e) { /* not allowed */ }
    this.notify(body);
  }

  /* The turn is over (claimed, lapsed, left): the page's own title again. */
  reset() {
    this.stopFlashing();
    this.doc.title = this.title;
  }

  flash(titles) {
    this.stopFlashing();
    let i = 0;
    this.flasher = this.win.setInterval(() => { i = 1 - i; this.doc.title = titles[i]; }, FLASH_MS);
  }

  stopFlashing() {
    if (this.flasher === null) return;
    this.win.clearInterval(this.flasher);
    this.flasher = null;
    this.doc.title = turnTitles(this.title)[0];
  }

  beep() {
    const ctx = this.audio;
    if (!ctx) return;
    try {
      if (ctx.state === "suspended") ctx.resume();
      [0, 0.25].forEach((at) => {
        const tone = ctx.createOscillator();
        const gain = ctx.createGain();
        tone.frequency.value = 880;
        gain.gain.setValueAtTime(0.15, ctx.currentTime + at);
        gain.gain.exponentialRampToValueAtTime(0.001, ctx.currentTime + at + 0.18);
        tone.connect(gain).connect(ctx.destination);
        tone.start(ctx.currentTime + at);
        tone.stop(ctx.currentTime + at + 0.2);
      });
    } catch (e) { /* no sound: the title and the notification remain */ }
  }

  notify(body) {
    const N = this.win.Notification;
    if (!N || N.permission !== "granted") return;
    try {
      const note = new N("Your turn!", { body, tag: "fq-your-turn" });
      note.onclick = () => { this.win.focus(); note.close(); };
    } catch (e) { /* some phones only notify from a service worker */ }
  }
}

/* The waiting panel's offer to be notified: shown while the browser has not
   been told yes or no; a tap asks the browser. */
export function offerNotifications(button, hint) {
  const N = window.Notification;
  if (!button) return;
  const show = () => {
    button.hidden = !N || N.permission !== "default";
    if (hint) hint.hidden = !N || N.permission !== "granted";
  };
  button.addEventListener("click", () => {
    const asked = N.requestPermission(show);
    if (asked && asked.then) asked.then(show);
  });
  show();
}
