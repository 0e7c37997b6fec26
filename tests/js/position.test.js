import { assert, test } from "./harness.js";
import { afterServed, aheadText, progress, startingPlace } from "../../storefront/static/storefront/queue/position.js";

test("a tick moves the place forward by how much served grew", () => {
  assert.deepEqual(afterServed({ position: 120, served: 1000 }, 1050), { position: 70, served: 1050, resync: false });
});

test("no admissions: the place stays", () => {
  assert.deepEqual(afterServed({ position: 5, served: 10 }, 10), { position: 5, served: 10, resync: false });
});

test("a served counter that went backwards (Redis rebuilt) asks for the truth", () => {
  const next = afterServed({ position: 5, served: 10 }, 3);
  assert.equal(next.resync, true);
  assert.equal(next.position, 5);
});

test("reaching or passing the front asks for the truth (the admission is on its way)", () => {
  assert.equal(afterServed({ position: 5, served: 10 }, 15).resync, true);
  assert.equal(afterServed({ position: 5, served: 10 }, 14).position, 1);
  assert.equal(afterServed({ position: 5, served: 10 }, 14).resync, false);
});

test("without a snapshot, or a served count, there is nothing to count from", () => {
  assert.equal(afterServed(null, 10).resync, true);
  assert.equal(afterServed({ position: 5, served: null }, 10).resync, true);
  assert.equal(afterServed({ position: 5, served: 10 }, undefined).resync, true);
});

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
