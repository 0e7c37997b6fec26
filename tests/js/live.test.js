import { assert, test } from "./harness.js";
import { pollDelayMs } from "../../storefront/static/storefront/queue/live.js";

const noJitter = () => 0;

test("without a hint the page polls every 5 s", () => {
  assert.equal(pollDelayMs(null, noJitter), 5000);
  assert.equal(pollDelayMs(undefined, noJitter), 5000);
});

test("the server's hint sets the pace, never under 5 s nor over 30 s", () => {
  assert.equal(pollDelayMs(12, noJitter), 12000);
  assert.equal(pollDelayMs(1, noJitter), 5000);
  assert.equal(pollDelayMs(120, noJitter), 30000);
});

test("pages do not poll in step: up to 2 s more", () => {
  assert.equal(pollDelayMs(12, () => 0.5), 13000);
  assert.equal(pollDelayMs(12, () => 0.999), 13998);
});

test("a hint of 0 (admitted, or a tick due now) still waits the floor", () => {
  assert.equal(pollDelayMs(0, noJitter), 5000);
});
