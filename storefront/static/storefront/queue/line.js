/* The page's rules with the public line state (GET events/{id}/queue/state/,
   the same bytes as the socket's `line` message). Pure: no DOM, no clock,
   no network: `now` and `random` come from the caller. docs/API.md states
   these rules for anyone who models the page.

   The page learns its number once (the join's answer, or one snapshot:
   `position`, `served`, `score`, `epoch`) and places itself from the line
   state after that:
   - place = position - (state.served - served): never better than the
     truth (someone who left ahead only makes the truth better);
   - admitted once state.frontier >= score: then, and only then, it asks
     for its token (one authenticated call);
   - a state of another epoch (the pre-queue draw), or a served counter
     below the number's, means the number is stale: learn it again once,
     at a random moment within state.relearn_within_seconds;
   - after the draw, a pre-queue page (it holds a draw key) reads its number
     from the draw's public document instead (GET events/{id}/queue/draw/
     {shard}/, cacheable), at a random moment within
     min(state.relearn_within_seconds, 3 s); only when the document has no
     entry for it (or cannot be read) does it ask the authenticated way. */

export const HEAD_BATCHES = 2;        // within this many batches of the head: every tick
export const FAR_MAX_MS = 30000;      // further back: at most this apart
export const FAR_MIN_MS = 10000;      // and at least this apart (about two ticks)
export const JITTER_MS = 1500;        // after the tick, spread over this much
export const SLOW_MS = 60000;         // paused or sold out: about once a minute
export const DRAW_WITHIN_MS = 3000;   // the draw's document: read within this after the new epoch

/* What the state says to a page holding `number` (or null). */
export function placeIn(number, state) {
  if (!state) return { place: null, admitted: false, relearn: false };
  if (!number || typeof number.position !== "number" || typeof number.served !== "number"
      || typeof number.score !== "number" || number.epoch === null || number.epoch === undefined) {
    return { place: null, admitted: false, relearn: true };
  }
  if (state.epoch !== number.epoch || state.served < number.served) {
    return { place: null, admitted: false, relearn: true };
  }
  const admitted = typeof state.frontier === "number" && state.frontier >= number.score;
  const place = Math.max(1, number.position - (state.served - number.served));
  return { place, admitted, relearn: false };
}

/* After the page asked for its token and heard WAITING (a tie on the score,
   or a join that took its score before a tick and landed after it), it asks
   again only once a later tick admitted someone: `served` grew past the
   answer's. */
export function mayAskAgain(lastAnswerServed, state) {
  return typeof lastAnswerServed !== "number" || (state && state.served > lastAnswerServed);
}

/* Milliseconds until a waiting page reads the line state again, or null:
   stop (the sale ended). With a socket too: the socket brings the line only
   near the head (and now and then further back), and a `line` message
   counts as a read, so the timer starts again from it. `place`: its place now (null: unknown).
   Before the sale starts (`saleStart`, ms) nothing moves: at the start, or
   a minute on, whichever comes first. */
export function nextReadMs(state, place, now, random, saleStart = 0) {
  if (!state) return FAR_MIN_MS + random() * JITTER_MS;
  if (state.status === "ENDED") return null;
  if (saleStart > now) return Math.min(SLOW_MS, saleStart - now) + 250 + random() * JITTER_MS;
  const interval = Math.max(1, state.interval_seconds || 5) * 1000;
  if (state.status === "PAUSED" || state.status === "SOLD_OUT") {
    return SLOW_MS + random() * SLOW_MS / 6;
  }
  // Just after the next tick (a late tick: half an interval on).
  const untilTick = state.next_tick_at > now ? state.next_tick_at - now : interval / 2;
  const afterTick = untilTick + 250 + random() * JITTER_MS;
  const batch = Math.max(1, state.admission_batch_size || 1);
  if (typeof place !== "number" || place <= HEAD_BATCHES * batch) return afterTick;
  // Further back: when the line may reach the head window, within bounds.
  const rate = state.rate_per_second > 0 ? state.rate_per_second : batch / (interval / 1000);
  const reach = ((place - HEAD_BATCHES * batch) / rate) * 1000;
  const far = Math.min(FAR_MAX_MS, Math.max(FAR_MIN_MS, reach));
  return Math.max(afterTick, far + random() * JITTER_MS);
}

/* When to learn the number again after an epoch change: a random moment
   within the state's window, so the line does not ask at once. */
export function relearnDelayMs(state, random) {
  const within = Math.max(1, (state && state.relearn_within_seconds) || 5) * 1000;
  return random() * within;
}

/* Does the page read its number from the draw's document (rather than
   asking)? It holds a draw key, and the state is the draw's epoch (1) its
   number is not of. */
export function fromDraw(number, drawKey, state) {
  return Boolean(drawKey) && Boolean(state) && state.epoch === 1
    && (!number || number.epoch !== state.epoch);
}

/* When to read the draw's document after seeing the new epoch: a random
   moment within min(the state's window, 3 s), so a cache in front of the
   origin answers nearly all of them. */
export function drawDelayMs(state, random) {
  const within = Math.max(1, (state && state.relearn_within_seconds) || 5) * 1000;
  return random() * Math.min(DRAW_WITHIN_MS, within);
}

/* The number the draw's document gives the entry `entry` (hex digits 3-16
   of SHA-256(draw key)), or null: the document has none for it. */
export function numberFromDraw(doc, entry) {
  if (!doc || !doc.entries || typeof doc.entries[entry] !== "number"
      || typeof doc.served !== "number") {
    return null;
  }
  const rank = doc.entries[entry];
  return { position: rank, served: doc.served, score: rank, epoch: doc.epoch };
}

/* The estimated wait counting down between two reads of the state: the
   range the last state gave, less the seconds since it was written (the
   place shown stays the one the data guarantees). */
export function etaSince(range, state, now) {
  if (!range || !state || typeof state.at !== "number") return range;
  const elapsed = Math.max(0, (now - state.at) / 1000);
  const low = Math.max(0, range.low - elapsed);
  const high = range.high === null ? null : Math.max(low, range.high - elapsed);
  return { low, high };
}
