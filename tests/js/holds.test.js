import { assert, test } from "./harness.js";
import { holdText } from "../../storefront/static/storefront/holds.js";

const hold = (extra) => ({
  event_name: "Detty December", quantity: 2, expires_at: "2026-12-01T10:10:00Z", paying: false, ...extra,
});
const at = (iso) => Date.parse(iso);

test("the bar says how many, for what, and the time left to pay", () => {
  assert.equal(holdText(hold(), at("2026-12-01T10:00:48Z")),
    "You hold 2 tickets for Detty December \u2014 pay within 9:12");
});

test("one ticket reads as one", () => {
  assert.equal(holdText(hold({ quantity: 1 }), at("2026-12-01T10:09:00Z")),
    "You hold 1 ticket for Detty December \u2014 pay within 1:00");
});

test("a payment under way says so", () => {
  assert.equal(holdText(hold({ paying: true }), at("2026-12-01T10:09:30Z")),
    "You hold 2 tickets for Detty December \u2014 payment under way (0:30 left)");
});

test("a hold that ran out shows nothing", () => {
  assert.equal(holdText(hold(), at("2026-12-01T10:10:00Z")), "");
  assert.equal(holdText(hold({ expires_at: "not a date" }), at("2026-12-01T10:00:00Z")), "");
});
