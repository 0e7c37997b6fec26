import { assert, test } from "./harness.js";
import { untilText, untilWords } from "../../storefront/static/storefront/queue/countdown.js";

test("minutes and seconds", () => {
  assert.equal(untilText(65_000), "1:05");
  assert.equal(untilText(9_000), "0:09");
});

test("hours, then days", () => {
  assert.equal(untilText(3_725_000), "01:02:05");
  assert.equal(untilText(2 * 86_400_000 + 3_725_000), "2 days 01:02:05");
  assert.equal(untilText(86_400_000), "1 day 00:00:00");
});

test("a partial second still counts as one, and the past is zero", () => {
  assert.equal(untilText(400), "0:01");
  assert.equal(untilText(-5000), "0:00");
});

test("in words for screen readers", () => {
  assert.equal(untilWords(2 * 86_400_000 + 3 * 3_600_000), "2 days, 3 hours");
  assert.equal(untilWords(3_600_000 + 4 * 60_000), "1 hour, 4 minutes");
  assert.equal(untilWords(60_000), "1 minute");
  assert.equal(untilWords(30_000), "less than a minute");
});
