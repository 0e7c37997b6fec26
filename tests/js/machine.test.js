import { assert, test } from "./harness.js";
import {
  SALE_BADGE, SOLD_OUT_FIRST, chooseWarning, fewerLeftOffer, phaseFor, pushEffect, saleStateAt, wantsLive, opensAt,
} from "../../storefront/static/storefront/queue/machine.js";

const NOW = Date.parse("2026-07-01T12:00:00Z");
const sale = (fields) => ({
  status: "ACTIVE", sale_start: "2026-07-01T11:00:00Z", sale_end: "2026-07-02T11:00:00Z",
  prequeue_opens_at: null, ...fields,
});
const me = (fields) => ({ queue: null, claim: null, payment: null, tickets: [], ...fields });
const claim = (status, extra) => ({ claim_id: "c", status, release_text: "Your hold ran out before payment", ...extra });

test("the sale as a customer sees it", () => {
  assert.equal(saleStateAt(sale({}), NOW), "on_sale");
  assert.equal(saleStateAt(sale({ sale_start: "2026-07-01T13:00:00Z" }), NOW), "upcoming");
  assert.equal(saleStateAt(sale({ sale_start: "2026-07-01T13:00:00Z", prequeue_opens_at: "2026-07-01T11:30:00Z" }), NOW), "prequeue");
  assert.equal(saleStateAt(sale({ sale_end: "2026-07-01T11:59:59Z" }), NOW), "ended");
  assert.equal(saleStateAt(sale({ status: "PAUSED" }), NOW), "paused");
  assert.equal(saleStateAt(sale({ status: "SOLD_OUT" }), NOW), "sold_out");
  assert.equal(saleStateAt(sale({ status: "ENDED" }), NOW), "ended");
});

test("the room opens with the pre-queue when there is one", () => {
  assert.equal(opensAt(sale({})), Date.parse("2026-07-01T11:00:00Z"));
  assert.equal(opensAt(sale({ prequeue_opens_at: "2026-07-01T10:00:00Z" })), Date.parse("2026-07-01T10:00:00Z"));
});

test("signed out: a countdown before the sale, else sign in, else ended", () => {
  assert.equal(phaseFor(null, { saleState: "upcoming" }).phase, "upcoming");
  assert.equal(phaseFor(null, { saleState: "on_sale" }).phase, "signin");
  assert.equal(phaseFor(null, { saleState: "paused" }).phase, "signin");
  assert.equal(phaseFor(null, { saleState: "ended" }).phase, "ended");
});

test("signed in, not in line: join while joinable, the countdown before", () => {
  assert.deepEqual(phaseFor(me({}), { saleState: "on_sale" }), { phase: "join", notice: "" });
  assert.equal(phaseFor(me({}), { saleState: "sold_out" }).phase, "join");
  assert.equal(phaseFor(me({}), { saleState: "upcoming" }).phase, "upcoming");
  assert.equal(phaseFor(me({}), { saleState: "ended" }).phase, "ended");
});

test("the queue entry decides while there is no claim", () => {
  assert.equal(phaseFor(me({ queue: { status: "WAITING" } }), { saleState: "on_sale" }).phase, "waiting");
  assert.equal(phaseFor(me({ queue: { status: "ADMITTED" } }), { saleState: "on_sale" }).phase, "admitted");
  const lapsed = phaseFor(me({ queue: { status: "EXPIRED" } }), { saleState: "on_sale" });
  assert.deepEqual(lapsed, { phase: "join", notice: "Your turn passed before you chose tickets." });
  // Admitted when nothing was left: first on the waiting list, and told so.
  const soldOut = phaseFor(me({ queue: { status: "EXPIRED", reason: "sold_out" } }), { saleState: "sold_out" });
  assert.deepEqual(soldOut, { phase: "join", notice: SOLD_OUT_FIRST });
});

test("the time to choose warns in time and offers its one extension", () => {
  assert.equal(chooseWarning(31, 30, true), null);
  assert.equal(chooseWarning(0, 30, true), null);  // over: the server decides what follows
  const warned = chooseWarning(30, 30, true);
  assert.equal(warned.extend, true);
  assert.ok(/less than 30 seconds/.test(warned.text), warned.text);
  assert.ok(/ask for it once/.test(warned.text), warned.text);
  const used = chooseWarning(12, 30, false);
  assert.equal(used.extend, false);
  assert.ok(!/ask for it once/.test(used.text), used.text);
});

test("a claim beats the queue entry: held, paying, paid", () => {
  const ctx = { saleState: "on_sale" };
  assert.equal(phaseFor(me({ queue: { status: "COMPLETED" }, claim: claim("CLAIMED") }), ctx).phase, "claim");
  const paying = me({ claim: claim("CLAIMED"), payment: { status: "PENDING", status_text: "Waiting for your payment" } });
  assert.equal(phaseFor(paying, ctx).phase, "paying");
  const failed = me({ claim: claim("CLAIMED"), payment: { status: "FAILED", status_text: "Not paid: you were not charged" } });
  assert.deepEqual(phaseFor(failed, ctx), {
    phase: "claim",
    notice: "Not paid: you were not charged. Your tickets are still held: try again before the hold runs out.",
  });
  assert.equal(phaseFor(me({ claim: claim("CONFIRMED") }), { saleState: "ended" }).phase, "confirmed");
});

test("a released hold says why and offers the queue again", () => {
  const released = phaseFor(me({ claim: claim("RELEASED") }), { saleState: "on_sale" });
  assert.deepEqual(released, { phase: "join", notice: "Your hold ran out before payment." });
});

test("refunded tickets are not shown as tickets to use", () => {
  const refunded = me({ claim: claim("RELEASED", { release_text: "Refunded" }), tickets: [{ status: "void" }] });
  assert.equal(phaseFor(refunded, { saleState: "on_sale" }).phase, "join");
});

test("a staff refund is said once", () => {
  const refunded = me({
    claim: claim("RELEASED", { release_text: "Your purchase was cancelled" }),
    payment: { status: "REFUNDED", status_text: "Refunded" },
  });
  assert.equal(phaseFor(refunded, { saleState: "on_sale" }).notice, "Your purchase was cancelled. Refunded.");
  const same = me({
    claim: claim("RELEASED", { release_text: "Refunded" }),
    payment: { status: "REFUNDED", status_text: "Refunded" },
  });
  assert.equal(phaseFor(same, { saleState: "on_sale" }).notice, "Refunded.");
});

test("pushes: the line moving, our turn, the sale changing", () => {
  const line = { type: "line", served: 40, frontier: 12, epoch: 1 };
  assert.deepEqual(pushEffect(line, "waiting"), { line });
  const snapshot = { type: "position", status: "WAITING", position: 3, served: 1 };
  assert.deepEqual(pushEffect(snapshot, "waiting"), { snapshot });
  assert.deepEqual(pushEffect({ type: "admitted", admission_token: "t", admission_expires_at: "x" }, "waiting"),
    { admitted: { token: "t", expiresAt: "x", extendable: true } });
  assert.deepEqual(pushEffect({ type: "admitted", admission_token: "t", admission_expires_at: "x", admission_extendable: false }, "admitted"),
    { admitted: { token: "t", expiresAt: "x", extendable: false } });
  assert.deepEqual(pushEffect({ type: "admitted" }, "waiting"), { refresh: true });
  assert.deepEqual(pushEffect({ type: "paused" }, "waiting"), { eventStatus: "PAUSED" });
  assert.deepEqual(pushEffect({ type: "resumed" }, "waiting"), { eventStatus: "ACTIVE" });
  assert.deepEqual(pushEffect({ type: "sold_out" }, "waiting"), { eventStatus: "SOLD_OUT" });
  // The end of the sale asks nothing: 40,000 pages must not all ask at once.
  assert.deepEqual(pushEffect({ type: "expired", reason: "sale_ended" }, "admitted"), { eventStatus: "ENDED" });
  assert.deepEqual(pushEffect({ type: "ended" }, "waiting"), { eventStatus: "ENDED" });
  assert.deepEqual(pushEffect({ type: "expired", reason: "admission_window" }, "admitted"), { refresh: true });
  assert.deepEqual(pushEffect({ type: "expired", reason: "admission_window" }, "claim"), {});
  assert.deepEqual(pushEffect({ type: "nonsense" }, "waiting"), {});
  assert.deepEqual(pushEffect(null, "waiting"), {});
});

test("only waiting and admitted keep the socket open", () => {
  assert.ok(wantsLive("waiting") && wantsLive("admitted"));
  assert.ok(!wantsLive("claim") && !wantsLive("join") && !wantsLive("confirmed"));
});

test("every sale state has a badge in plain words", () => {
  ["upcoming", "prequeue", "on_sale", "paused", "sold_out", "ended"].forEach((state) => {
    const [css, words] = SALE_BADGE[state];
    assert.equal(css, state);
    assert.ok(/^[A-Z][a-z ]+$/.test(words), words);
  });
});

test("fewer tickets left than asked for: the page offers the ones that are", () => {
  const refused = (details) => ({ code: "not_enough_tickets", message: "Only 2 tickets are left.", details });
  assert.deepEqual(fewerLeftOffer(refused({ available: 2 })), {
    quantity: 2, text: "Only 2 left \u2014 take 2?", button: "Hold these 2 tickets",
  });
  assert.deepEqual(fewerLeftOffer(refused({ available: 1 })), {
    quantity: 1, text: "Only 1 left \u2014 take it?", button: "Hold the last ticket",
  });
  // An answer that names no count (or none left) offers nothing.
  assert.equal(fewerLeftOffer(refused({})), null);
  assert.equal(fewerLeftOffer(refused({ available: 0 })), null);
  assert.equal(fewerLeftOffer(refused({ available: "2" })), null);
  assert.equal(fewerLeftOffer({ code: "not_enough_tickets" }), null);
  assert.equal(fewerLeftOffer(null), null);
});
