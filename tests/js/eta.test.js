import { assert, test } from "./harness.js";
import { etaRange, etaText } from "../../storefront/static/storefront/queue/eta.js";

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
  const soon = etaRange({ ...base, position: 10, ratePerSecond: null });
  assert.deepEqual(soon, { low: 0, high: null });
  assert.equal(etaText(soon), "Estimating: we are measuring how fast the line moves.");
  assert.equal(etaText(etaRange({ ...base, position: 5000, ratePerSecond: 0 })), "At least 4 minutes.");
});

test("hours", () => {
  assert.equal(etaText({ low: 3600, high: 9000 }), "1–3 hours.");
  assert.equal(etaText({ low: 30, high: 7200 }), "Up to 2 hours.");
});

test("no place, no estimate", () => {
  assert.equal(etaRange({ ...base, position: null, ratePerSecond: 5 }), null);
  assert.equal(etaText(null), "");
});
