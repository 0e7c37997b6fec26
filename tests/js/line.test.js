import { assert, test } from "./harness.js";
import {
  FAR_MAX_MS, FAR_MIN_MS, SLOW_MS, drawDelayMs, etaSince, fromDraw, mayAskAgain, nextReadMs,
  numberFromDraw, placeIn, relearnDelayMs,
} from "../../storefront/static/storefront/queue/line.js";

const number = { position: 120, served: 1000, score: 5000, epoch: 1 };
const state = (fields) => ({
  status: "ACTIVE", epoch: 1, served: 1000, frontier: 4000, interval_seconds: 5,
  admission_batch_size: 50, rate_per_second: 10, next_tick_at: 10000, at: 5000,
  relearn_within_seconds: 40, ...fields,
});
const noJitter = () => 0;

test("the place counts down by how much served grew since the number", () => {
  assert.deepEqual(placeIn(number, state({ served: 1050 })), { place: 70, admitted: false, relearn: false });
  assert.deepEqual(placeIn(number, state({})), { place: 120, admitted: false, relearn: false });
});

test("the frontier reaching the score is the admission, a tie included", () => {
  assert.equal(placeIn(number, state({ served: 1119, frontier: 4999 })).admitted, false);
  assert.equal(placeIn(number, state({ served: 1120, frontier: 5000 })).admitted, true);
  assert.equal(placeIn(number, state({ served: 1200, frontier: 9000 })).admitted, true);
  assert.equal(placeIn(number, state({ frontier: null })).admitted, false);
});

test("the place shown never goes below 1 while the frontier has not reached the score", () => {
  // Served ran past the number (customers who joined with a lower score
  // after the snapshot): the page shows 1, not 0 or less.
  assert.deepEqual(placeIn(number, state({ served: 1300, frontier: 4900 })), { place: 1, admitted: false, relearn: false });
});

test("another epoch, a served counter gone back, or no number: learn it again", () => {
  assert.equal(placeIn(number, state({ epoch: 2 })).relearn, true);
  assert.equal(placeIn(number, state({ served: 999 })).relearn, true);
  assert.equal(placeIn(null, state({})).relearn, true);
  assert.equal(placeIn({ ...number, epoch: null }, state({})).relearn, true);
  assert.equal(placeIn({ ...number, score: null }, state({})).relearn, true);
  assert.deepEqual(placeIn(number, null), { place: null, admitted: false, relearn: false });
});

test("after a WAITING answer to its token question a page asks again only after a later admission", () => {
  assert.equal(mayAskAgain(null, state({})), true);
  assert.equal(mayAskAgain(1000, state({ served: 1000 })), false);
  assert.equal(mayAskAgain(1000, state({ served: 1001 })), true);
});

test("within two batches of the head the page reads just after each tick", () => {
  const s = state({});
  assert.equal(nextReadMs(s, 100, 6000, noJitter), 4250);
  assert.equal(nextReadMs(s, 1, 6000, () => 0.999), 4250 + 1498.5);
  assert.equal(nextReadMs(s, null, 6000, noJitter), 4250);
});

test("a late tick: half an interval on", () => {
  assert.equal(nextReadMs(state({}), 10, 12000, noJitter), 2750);
});

test("further back the page reads when the line may reach it, 10 to 30 s apart", () => {
  const s = state({});
  assert.equal(nextReadMs(s, 250, 6000, noJitter), 15000);  // 150 places at 10/s
  assert.equal(nextReadMs(s, 120, 6000, noJitter), FAR_MIN_MS);
  assert.equal(nextReadMs(s, 100000, 6000, noJitter), FAR_MAX_MS);
  // No measured rate: a full batch per tick.
  assert.equal(nextReadMs(state({ rate_per_second: null }), 1100, 6000, noJitter), FAR_MAX_MS);
});

test("paused or sold out: about once a minute; ended: stop", () => {
  assert.equal(nextReadMs(state({ status: "SOLD_OUT" }), 5, 6000, noJitter), SLOW_MS);
  assert.equal(nextReadMs(state({ status: "PAUSED" }), 5, 6000, () => 0.6), SLOW_MS + 6000);
  assert.equal(nextReadMs(state({ status: "ENDED" }), 5, 6000, noJitter), null);
});

test("before the sale starts nothing moves: read at the start, at most a minute apart", () => {
  assert.equal(nextReadMs(state({}), 3, 6000, noJitter, 26000), 20250);
  assert.equal(nextReadMs(state({}), 3, 6000, noJitter, 600000), SLOW_MS + 250);
  assert.equal(nextReadMs(state({ status: "ENDED" }), 3, 6000, noJitter, 26000), null);
});

test("relearning is spread over the state's window", () => {
  assert.equal(relearnDelayMs(state({}), noJitter), 0);
  assert.equal(relearnDelayMs(state({}), () => 0.5), 20000);
  assert.equal(relearnDelayMs(null, () => 0.5), 2500);
});

test("after the draw a page with a draw key reads its number from the draw's document", () => {
  const before = { ...number, epoch: 0 };
  assert.equal(fromDraw(before, "k", state({ epoch: 1 })), true);
  assert.equal(fromDraw({ ...number, epoch: null }, "k", state({ epoch: 1 })), true);
  assert.equal(fromDraw(null, "k", state({ epoch: 1 })), true);
  assert.equal(fromDraw(before, null, state({ epoch: 1 })), false);  // no key: it asks
  assert.equal(fromDraw(number, "k", state({ epoch: 1, served: 999 })), false);  // not the draw
  assert.equal(fromDraw(before, "k", state({ epoch: 0 })), false);
  assert.equal(fromDraw(before, "k", null), false);
  // Within min(the window, 3 s): a cache answers nearly all of them.
  assert.equal(drawDelayMs(state({}), () => 0.5), 1500);
  assert.equal(drawDelayMs(state({ relearn_within_seconds: 1 }), () => 0.5), 500);
  assert.equal(drawDelayMs(null, () => 0.999), 2997);
  const doc = { event_id: "e", epoch: 1, served: 0, entries: { "0123456789abcd": 17 } };
  assert.deepEqual(numberFromDraw(doc, "0123456789abcd"), { position: 17, served: 0, score: 17, epoch: 1 });
  assert.equal(numberFromDraw(doc, "ffffffffffffff"), null);
  assert.equal(numberFromDraw(null, "0123456789abcd"), null);
  // Its place from there on, as from any number.
  assert.deepEqual(placeIn(numberFromDraw(doc, "0123456789abcd"), state({ served: 10, frontier: 10 })),
    { place: 7, admitted: false, relearn: false });
});

test("the wait counts down between reads, the place does not", () => {
  assert.deepEqual(etaSince({ low: 60, high: 120 }, state({ at: 5000 }), 35000), { low: 30, high: 90 });
  assert.deepEqual(etaSince({ low: 10, high: null }, state({ at: 5000 }), 35000), { low: 0, high: null });
  assert.deepEqual(etaSince({ low: 10, high: 20 }, state({ at: 5000 }), 4000), { low: 10, high: 20 });
});
