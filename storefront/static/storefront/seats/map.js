/* The seat map's rules, pure (no DOM): where seats are drawn, how the arrow
   keys move between them, what a live delta or a conflict does to the map
   and to the customer's picks, and the words a screen reader hears.

   A seat, as GET events/{id}/tiers/{tier_id}/seats/ gives it:
   {label, section, row, number, x, y, status, accessible, restricted_view},
   status one of available | held | sold | blocked. */

export const STATUS_WORDS = {
  available: "available",
  held: "held by another customer",
  sold: "sold",
  blocked: "not for sale",
};

/* Seats with a place to draw: a seat without x/y (a map imported without
   them) goes at its number in its row, rows in the order they come. */
export function placed(seats) {
  const rowIndex = new Map();
  return seats.map((s) => {
    const key = (s.section || "") + "|" + s.row;
    if (!rowIndex.has(key)) rowIndex.set(key, rowIndex.size + 1);
    const x = typeof s.x === "number" ? s.x : s.number;
    const y = typeof s.y === "number" ? s.y : rowIndex.get(key);
    return Object.assign({}, s, { x, y });
  });
}

/* The drawing's frame: a viewBox around every seat with room for the stage
   above, and the seat radius from the tightest spacing between two seats of
   a row (so seats never overlap, whatever units x/y use). */
export function layout(seats) {
  if (!seats.length) return { viewBox: [0, 0, 10, 10], r: 1, stageY: 0, minX: 0, maxX: 10, gap: 1 };
  let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
  seats.forEach((s) => {
    minX = Math.min(minX, s.x); maxX = Math.max(maxX, s.x);
    minY = Math.min(minY, s.y); maxY = Math.max(maxY, s.y);
  });
  const rows = new Map();
  seats.forEach((s) => {
    const key = (s.section || "") + "|" + s.row;
    if (!rows.has(key)) rows.set(key, []);
    rows.get(key).push(s.x);
  });
  let gap = Infinity;
  rows.forEach((xs) => {
    xs.sort((a, b) => a - b);
    for (let i = 1; i < xs.length; i++) if (xs[i] > xs[i - 1]) gap = Math.min(gap, xs[i] - xs[i - 1]);
  });
  const ys = Array.from(new Set(seats.map((s) => s.y))).sort((a, b) => a - b);
  for (let i = 1; i < ys.length; i++) gap = Math.min(gap, ys[i] - ys[i - 1]);
  if (!isFinite(gap)) gap = 1;
  const r = gap * 0.42;
  const pad = gap;           // room for row letters either side
  const stage = gap * 2.2;   // the stage band above the first row
  return {
    viewBox: [minX - pad * 1.2, minY - pad - stage, maxX - minX + pad * 2.4, maxY - minY + pad * 2 + stage],
    r,
    stageY: minY - pad - stage * 0.55,
    minX,
    maxX,
    gap,
  };
}

/* Row letters to draw at each end of a row: [{row, y, x0, x1}]. */
export function rowLabels(seats) {
  const rows = new Map();
  seats.forEach((s) => {
    const key = (s.section || "") + "|" + s.row;
    const r = rows.get(key) || { row: s.row, y: s.y, x0: s.x, x1: s.x };
    r.x0 = Math.min(r.x0, s.x); r.x1 = Math.max(r.x1, s.x);
    rows.set(key, r);
  });
  return Array.from(rows.values());
}

/* What a screen reader says on a seat. */
export function seatWords(seat, picked) {
  const parts = ["Seat " + seat.label];
  if (seat.section) parts.push("section " + seat.section);
  parts.push(picked ? "selected" : STATUS_WORDS[seat.status] || seat.status);
  if (seat.accessible) parts.push("wheelchair accessible");
  if (seat.restricted_view) parts.push("restricted view");
  return parts.join(", ");
}

/* The seat the arrow key `key` moves to from `from`: the nearest seat that
   way, in the same row for left/right (across a gap), in the nearest row for
   up/down (its closest seat); `from` itself when there is none. */
export function neighbour(seats, from, key) {
  const dir = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[key];
  if (!dir || !from) return from;
  let best = null, bestScore = Infinity;
  seats.forEach((s) => {
    if (s === from) return;
    const dx = s.x - from.x, dy = s.y - from.y;
    const along = dx * dir[0] + dy * dir[1];    // distance in the key's direction
    if (along <= 0) return;
    const across = Math.abs(dir[0] ? dy : dx);  // distance off the line
    // Left/right stay in the row (past a gap); up/down take the nearest row.
    const score = along + across * (dir[0] ? 3 : 0.3);
    if (score < bestScore) { best = s; bestScore = score; }
  });
  return best || from;
}

/* A click or Enter/Space on a seat: the new list of picks, and why not when
   the seat cannot be picked. */
export function toggle(picks, seat, max) {
  if (picks.indexOf(seat.label) !== -1) return { picks: picks.filter((l) => l !== seat.label), reason: "" };
  if (seat.status !== "available") {
    return { picks, reason: "Seat " + seat.label + " is " + (STATUS_WORDS[seat.status] || seat.status) + "." };
  }
  if (picks.length >= max) {
    return { picks, reason: "You can pick at most " + max + (max === 1 ? " seat." : " seats.") };
  }
  return { picks: picks.concat([seat.label]), reason: "" };
}

/* A live ``seats`` push on a map loaded at `version`: the seats whose status
   changed, and the customer's picks that someone else just took. A delta no
   newer than the map is stale (the map already has it); one that began
   before the map (``since``) is applied, and `reload` says to read the map
   again (some of its changes may be older than the map). */
export function applyDelta(byLabel, version, message, picks) {
  const changed = [], lost = [];
  if (!message || !Array.isArray(message.changes)) return { changed, lost, stale: false, reload: false };
  const known = typeof version === "number" && typeof message.version === "number";
  if (known && message.version <= version) return { changed, lost, stale: true, reload: false };
  const reload = known && typeof message.since === "number" && message.since <= version;
  message.changes.forEach((c) => {
    const seat = byLabel.get(c.label);
    if (!seat || !STATUS_WORDS[c.status] || seat.status === c.status) return;
    seat.status = c.status;
    changed.push(seat.label);
    if (c.status !== "available" && picks.indexOf(seat.label) !== -1) lost.push(seat.label);
  });
  return { changed, lost, stale: false, reload };
}

/* A list of labels in words: "A-1", "A-1 and A-2", "A-1, A-2 and A-3". */
export function labelList(labels) {
  if (labels.length <= 1) return labels.join("");
  return labels.slice(0, -1).join(", ") + " and " + labels[labels.length - 1];
}

/* The message of a 409 seats_unavailable answer. */
export function conflictText(taken) {
  if (!taken.length) return "Those seats were just taken. Pick others on the map.";
  const one = taken.length === 1;
  return (one ? "Seat " : "Seats ") + labelList(taken) + (one ? " was" : " were")
    + " just taken by someone else. Nothing is held: pick other seats on the map.";
}

/* The claim's button, by the picks: the seats picked, or the best `quantity`. */
export function claimButtonText(picks, quantity) {
  if (picks.length) return "Hold " + (picks.length === 1 ? "seat " : "seats ") + labelList(picks);
  return "Hold the best " + (quantity === 1 ? "seat" : quantity + " seats") + " available";
}

/* The zoom steps of the map on a small screen. */
export const ZOOMS = [1, 1.5, 2.25, 3.5];

export function nextZoom(current, step) {
  const i = ZOOMS.indexOf(current);
  const j = Math.max(0, Math.min(ZOOMS.length - 1, (i === -1 ? 0 : i) + step));
  return ZOOMS[j];
}
