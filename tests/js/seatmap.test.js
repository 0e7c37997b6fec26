import { assert, test } from "./harness.js";
import {
  applyDelta, claimButtonText, conflictText, labelList, layout, neighbour, nextZoom, placed, rowLabels,
  seatWords, toggle,
} from "../../storefront/static/storefront/seats/map.js";

/* Rows A-C of 4 seats, 10 units apart, row A nearest the stage (smallest y). */
function grid() {
  const seats = [];
  "ABC".split("").forEach((row, r) => {
    for (let n = 1; n <= 4; n++) {
      seats.push({ label: row + "-" + n, section: "", row, number: n, x: n * 10, y: r * 10,
                   status: "available", accessible: false, restricted_view: false });
    }
  });
  return seats;
}

const byLabel = (seats) => new Map(seats.map((s) => [s.label, s]));

test("the frame holds every seat, the stage above row A, seats never overlapping", () => {
  const f = layout(grid());
  const [x, y, w, h] = f.viewBox;
  assert.equal(f.gap, 10);
  assert.ok(f.r < f.gap / 2, "radius below half the spacing");
  assert.ok(x < 10 - f.r && x + w > 40 + f.r, "every column inside");
  assert.ok(y < f.stageY && f.stageY < 0, "the stage above the first row");
  assert.ok(y + h > 20 + f.r, "the last row inside");
});

test("an empty map and a single seat still give a frame", () => {
  assert.equal(layout([]).viewBox.length, 4);
  const one = layout([{ label: "A-1", row: "A", x: 5, y: 5 }]);
  assert.equal(one.gap, 1);
  assert.ok(one.viewBox[2] > 0 && one.viewBox[3] > 0);
});

test("each row is labelled at both ends", () => {
  assert.deepEqual(rowLabels(grid()).map((r) => [r.row, r.x0, r.x1, r.y]),
    [["A", 10, 40, 0], ["B", 10, 40, 10], ["C", 10, 40, 20]]);
});

test("arrow keys move to the next seat of the row, or the same seat a row away", () => {
  const seats = grid();
  const m = byLabel(seats);
  assert.equal(neighbour(seats, m.get("B-2"), "ArrowRight").label, "B-3");
  assert.equal(neighbour(seats, m.get("B-2"), "ArrowLeft").label, "B-1");
  assert.equal(neighbour(seats, m.get("B-2"), "ArrowUp").label, "A-2");
  assert.equal(neighbour(seats, m.get("B-2"), "ArrowDown").label, "C-2");
});

test("at the edge the focus stays; other keys do not move it", () => {
  const seats = grid();
  const m = byLabel(seats);
  assert.equal(neighbour(seats, m.get("A-4"), "ArrowRight").label, "A-4");
  assert.equal(neighbour(seats, m.get("A-1"), "ArrowUp").label, "A-1");
  assert.equal(neighbour(seats, m.get("A-1"), "Tab").label, "A-1");
});

test("a shorter row: down goes to the nearest seat below, not across the map", () => {
  const seats = grid().filter((s) => !(s.row === "B" && s.number === 4));
  const m = byLabel(seats);
  assert.equal(neighbour(seats, m.get("A-4"), "ArrowDown").label, "B-3");
});

test("picking and unpicking, within the limit, only free seats", () => {
  const m = byLabel(grid());
  let r = toggle([], m.get("A-1"), 2);
  assert.deepEqual(r.picks, ["A-1"]);
  r = toggle(r.picks, m.get("A-2"), 2);
  assert.deepEqual(r.picks, ["A-1", "A-2"]);
  const full = toggle(r.picks, m.get("A-3"), 2);
  assert.deepEqual(full.picks, ["A-1", "A-2"]);
  assert.equal(full.reason, "You can pick at most 2 seats.");
  assert.deepEqual(toggle(r.picks, m.get("A-1"), 2).picks, ["A-2"]);
  m.get("B-1").status = "held";
  const taken = toggle([], m.get("B-1"), 2);
  assert.deepEqual(taken.picks, []);
  assert.equal(taken.reason, "Seat B-1 is held by another customer.");
});

test("a delta greys seats out and takes them from the picks", () => {
  const m = byLabel(grid());
  const r = applyDelta(m, 3, {
    type: "seats", tier_id: "t", version: 4,
    changes: [{ label: "A-1", status: "held" }, { label: "A-2", status: "sold" },
              { label: "A-3", status: "available" }, { label: "Z-9", status: "held" },
              { label: "B-1", status: "nonsense" }],
  }, ["A-1", "B-2"]);
  assert.deepEqual(r.changed, ["A-1", "A-2"]);
  assert.deepEqual(r.lost, ["A-1"]);
  assert.equal(m.get("A-2").status, "sold");
  assert.equal(m.get("B-1").status, "available");
});

test("a delta no newer than the map is stale; without versions it applies", () => {
  const m = byLabel(grid());
  const old = applyDelta(m, 7, { version: 7, changes: [{ label: "A-1", status: "held" }] }, []);
  assert.equal(old.stale, true);
  assert.equal(m.get("A-1").status, "available");
  const unversioned = applyDelta(m, null, { version: null, changes: [{ label: "A-1", status: "held" }] }, []);
  assert.deepEqual(unversioned.changed, ["A-1"]);
  assert.deepEqual(applyDelta(m, 1, { type: "seats" }, []).changed, []);
});

test("screen reader words: label, status or selected, flags", () => {
  const seat = { label: "C-12", section: "Stalls", status: "available", accessible: true, restricted_view: true };
  assert.equal(seatWords(seat, false), "Seat C-12, section Stalls, available, wheelchair accessible, restricted view");
  assert.equal(seatWords(seat, true), "Seat C-12, section Stalls, selected, wheelchair accessible, restricted view");
  assert.equal(seatWords({ label: "A-1", status: "sold" }, false), "Seat A-1, sold");
});

test("labels and the conflict in words", () => {
  assert.equal(labelList([]), "");
  assert.equal(labelList(["A-1"]), "A-1");
  assert.equal(labelList(["A-1", "A-2", "A-3"]), "A-1, A-2 and A-3");
  assert.equal(conflictText(["A-1"]),
    "Seat A-1 was just taken by someone else. Nothing is held: pick other seats on the map.");
  assert.ok(conflictText(["A-1", "A-2"]).indexOf("Seats A-1 and A-2 were") === 0);
  assert.ok(conflictText([]).length > 0);
});

test("the claim button says what will be held", () => {
  assert.equal(claimButtonText(["A-1", "A-2"], 4), "Hold seats A-1 and A-2");
  assert.equal(claimButtonText(["B-7"], 4), "Hold seat B-7");
  assert.equal(claimButtonText([], 1), "Hold the best seat available");
  assert.equal(claimButtonText([], 3), "Hold the best 3 seats available");
});

test("zoom steps stop at both ends", () => {
  assert.equal(nextZoom(1, -1), 1);
  assert.equal(nextZoom(1, 1), 1.5);
  assert.equal(nextZoom(3.5, 1), 3.5);
  assert.equal(nextZoom(7, 1), 1.5, "an unknown zoom starts from the first step");
});

test("right across a gap in the row stays in the row", () => {
  const seats = grid().filter((s) => s.label !== "A-3");
  const m = byLabel(seats);
  assert.equal(neighbour(seats, m.get("A-2"), "ArrowRight").label, "A-4");
});

test("a delta that began before the map applies and asks for the map again", () => {
  const m = byLabel(grid());
  const r = applyDelta(m, 5, { version: 8, since: 4, changes: [{ label: "A-1", status: "held" }] }, []);
  assert.deepEqual(r.changed, ["A-1"]);
  assert.equal(r.reload, true);
  const newer = applyDelta(m, 5, { version: 8, since: 6, changes: [{ label: "A-2", status: "held" }] }, []);
  assert.equal(newer.reload, false);
});

test("seats without x/y are placed by number and row order", () => {
  const seats = placed([
    { label: "A-1", row: "A", number: 1, x: null, y: null },
    { label: "A-2", row: "A", number: 2 },
    { label: "B-1", row: "B", number: 1, x: null, y: null },
    { label: "B-2", row: "B", number: 2, x: 7.5, y: 9 },
  ]);
  assert.deepEqual(seats.map((s) => [s.x, s.y]), [[1, 1], [2, 1], [1, 2], [7.5, 9]]);
});
