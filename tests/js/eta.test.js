import { assert, test } from "./harness.js";
import { etaRange, etaText, steadyRange } from "../../storefront/static/storefront/queue/eta.js";

const base = { batchSize: 100, intervalSeconds: 5, waitBeforeStart: 0 };

test("within the first batch: the next tick, not minutes", () => {
  const range = etaRange({ ...base, position: 10, ratePerSecond: 20 });
  assert.deepEqual(range, { low: 0, high: 5 });
  assert.equal(etaText(range), "Less than a minute.");
});

test("a slow measured rate never makes a short line sound long without saying how short it may be", () => {
  // The walk in the issue: a 45 s wait shown as "about 10 minutes". A rate
  // measured while few were waiting is low; the range keeps the fast bound.
  const range = etaRange({ ...base, position: 3, ratePerSecond: 0.005 });
  assert.equal(range.low, 0);
  assert.equal(etaText(range), "Up to 15 minutes.");
});

test("a long line: at least one tick per batch, at most the measured rate with a margin", () => {
  const range = etaRange({ ...base, position: 5000, ratePerSecond: 20 });
  assert.equal(range.low, 245);  // 50 batches: 49 ticks after the first
  assert.equal(range.high, 375); // 5000 / 20 * 1.5
  assert.equal(etaText(range), "4–7 minutes.");
});

test("the wait before the sale starts is added to both ends", () => {
  const range = etaRange({ ...base, position: 10, ratePerSecond: 20, waitBeforeStart: 600 });
  assert.deepEqual(range, { low: 600, high: 605 });
  assert.equal(etaText(range), "10–11 minutes.");
});

test("with no measured rate there is no upper bound: it says so instead of guessing", () => {
  const unknown = etaRange({ ...base, position: 1000, ratePerSecond: null });
  assert.deepEqual(unknown, { low: 45, high: null });
  assert.equal(etaText(unknown), "Estimating: we are measuring how fast the line moves.");
  assert.equal(etaText(etaRange({ ...base, position: 5000, ratePerSecond: 0 })), "At least 4 minutes.");
});

test("at the head the next tick admits you: no 'Estimating' at place 1", () => {
  const first = etaRange({ ...base, position: 1, ratePerSecond: null });
  assert.deepEqual(first, { low: 0, high: 5 });
  assert.equal(etaText(first), "Less than a minute.");
  assert.deepEqual(etaRange({ ...base, position: 150, ratePerSecond: null }), { low: 5, high: 10 });
});

test("the shown estimate narrows steadily: no jump when a new rate is measured", () => {
  // The walk in the issue: "1–7 minutes" then, a few seconds on, a fresh rate says "1–3".
  let shown = steadyRange(null, { low: 60, high: 420 }, 0);
  assert.equal(etaText(shown), "1–7 minutes.");
  const texts = [];
  for (let t = 5; t <= 120; t += 5) {
    shown = steadyRange(shown, { low: Math.max(0, 60 - t), high: 180 - t }, t * 1000);
    texts.push(etaText(shown));
  }
  // Each step moves the upper bound by at most a minute, and it only goes down.
  const highs = texts.map((x) => Number((x.match(/(\d+) minutes?\.$/) || [0, 0])[1]));
  for (let i = 1; i < highs.length; i++) {
    assert.ok(highs[i] <= highs[i - 1] && highs[i - 1] - highs[i] <= 1, texts.join(" | "));
  }
  assert.equal(texts[texts.length - 1], "Up to 2 minutes.");  // closing on the fresh "up to 1"
});

test("a refresh (no rate yet) keeps the shown estimate counting down, not 'At least'", () => {
  const shown = { low: 60, high: 240, at: 0 };
  const after = steadyRange(shown, { low: 65, high: null }, 10000);
  assert.deepEqual(after, { low: 65, high: 230, at: 10000 });
  assert.equal(etaText(after), "1–4 minutes.");
  assert.deepEqual(steadyRange(shown, null, 30000), { low: 30, high: 210, at: 30000 });
});

test("hours", () => {
  assert.equal(etaText({ low: 3600, high: 9000 }), "1–3 hours.");
  assert.equal(etaText({ low: 30, high: 7200 }), "Up to 2 hours.");
});

test("no place, no estimate", () => {
  assert.equal(etaRange({ ...base, position: null, ratePerSecond: 5 }), null);
  assert.equal(etaText(null), "");
});
