import { assert, test } from "./harness.js";
import { aheadText, progress, startingPlace } from "../../storefront/static/storefront/queue/position.js";

test("the starting place is the first one seen, raised by a reshuffle behind it", () => {
  assert.equal(startingPlace(null, 40), 40);
  assert.equal(startingPlace(40, 12), 40);
  assert.equal(startingPlace(40, 55), 55);
  assert.equal(startingPlace(40, null), 40);
});

test("progress runs from the starting place to the front", () => {
  assert.equal(progress(101, 101), 0);
  assert.equal(progress(101, 51), 0.5);
  assert.equal(progress(101, 1), 1);
  assert.equal(progress(1, 1), 1);
  assert.equal(progress(10, 20), 0, "never below zero");
  assert.equal(progress(null, 5), 0);
});

test("people ahead, in words", () => {
  assert.equal(aheadText(1), "You are next.");
  assert.equal(aheadText(2), "1 person ahead of you.");
  assert.equal(aheadText(1201), "1,200 people ahead of you.");
  assert.equal(aheadText(null), "");
});

test("a place that is not a number has no progress and no words", () => {
  assert.equal(progress(40, undefined), 0);
  assert.equal(aheadText(undefined), "");
  assert.equal(startingPlace(undefined, 0), null);
});
