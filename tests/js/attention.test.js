import { assert, test } from "./harness.js";
import { Attention, turnTitles } from "../../storefront/static/storefront/queue/attention.js";

/* A document and a window that record what the page does with them. */
function fakes({ hidden = true, permission = "granted" } = {}) {
  const listeners = {};
  const doc = {
    title: "Waiting room · Detty December · FairQueue",
    hidden,
    addEventListener(type, fn) { (listeners[type] = listeners[type] || []).push(fn); },
  };
  const timers = [];
  const shown = [];
  const buzz = [];
  function Notification(title, options) { shown.push(title + ": " + options.body); }
  Notification.permission = permission;
  const win = {
    navigator: { vibrate: (pattern) => buzz.push(pattern) },
    Notification,
    setInterval(fn) { timers.push(fn); return timers.length; },
    clearInterval(id) { timers[id - 1] = null; },
    focus() {},
  };
  const fire = (type) => (listeners[type] || []).forEach((fn) => fn());
  return { doc, win, timers, shown, buzz, fire };
}

test("the titles say whose turn it is and keep the page's name", () => {
  const [first, second] = turnTitles("Waiting room · X");
  assert.equal(first, "Your turn! · Waiting room · X");
  assert.ok(second.indexOf("Choose your tickets") !== -1);
});

test("in another tab: the title flashes, the phone buzzes, a notification shows", () => {
  const f = fakes();
  const attention = new Attention({ document: f.doc, win: f.win });
  attention.call({ body: "Choose your tickets within 5:00." });
  assert.ok(f.doc.title.indexOf("Your turn!") === 0);
  assert.equal(f.timers.filter(Boolean).length, 1);
  f.timers[0]();
  assert.ok(f.doc.title.indexOf("Choose your tickets") !== -1);
  assert.deepEqual(f.buzz, [[200, 100, 200]]);
  assert.deepEqual(f.shown, ["Your turn!: Choose your tickets within 5:00."]);
});

test("looking at the tab stops the flashing; the turn's end gives the title back", () => {
  const f = fakes();
  const attention = new Attention({ document: f.doc, win: f.win });
  attention.call({ body: "x" });
  f.doc.hidden = false;
  f.fire("visibilitychange");
  assert.equal(f.timers.filter(Boolean).length, 0);
  assert.equal(f.doc.title, "Your turn! · Waiting room · Detty December · FairQueue");
  attention.reset();
  assert.equal(f.doc.title, "Waiting room · Detty December · FairQueue");
});

test("no notification without permission, no flashing while the tab is looked at", () => {
  const f = fakes({ hidden: false, permission: "default" });
  new Attention({ document: f.doc, win: f.win }).call({ body: "x" });
  assert.deepEqual(f.shown, []);
  assert.equal(f.timers.length, 0);
  assert.ok(f.doc.title.indexOf("Your turn!") === 0);
});
