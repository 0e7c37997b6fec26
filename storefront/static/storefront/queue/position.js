/* Position maths of the waiting room. Pure: no DOM, no clock, no network.

   The socket sends this customer's snapshot {position, served} on connect
   (and when asked). Each admission tick then broadcasts ONE message to the
   whole event, {served, admitted, rate_per_second}: every client moves its
   own place forward by how much `served` grew since its snapshot. */

/* The place after a tick's broadcast. `resync` asks for a fresh snapshot
   instead of trusting the arithmetic: the counter went backwards (Redis was
   rebuilt), we have no snapshot to count from, or we would be at or past the
   front (our own admission is on its way, or we drifted). */
export function afterServed(snapshot, served) {
  if (!snapshot || typeof snapshot.position !== "number" || typeof snapshot.served !== "number"
      || typeof served !== "number") {
    return { position: snapshot ? snapshot.position : null, served: snapshot ? snapshot.served : null, resync: true };
  }
  const moved = served - snapshot.served;
  if (moved === 0) return { position: snapshot.position, served, resync: false };
  if (moved < 0) return { position: snapshot.position, served: snapshot.served, resync: true };
  const position = snapshot.position - moved;
  if (position < 1) return { position: snapshot.position, served: snapshot.served, resync: true };
  return { position, served, resync: false };
}

/* The starting place the progress bar counts from: the first place seen for
   this queue entry, raised if the line was reshuffled behind it (the
   pre-queue shuffle can move a customer back). */
export function startingPlace(previousStart, position) {
  if (typeof position !== "number" || position < 1) return previousStart || null;
  if (typeof previousStart !== "number" || previousStart < position) return position;
  return previousStart;
}

/* 0..1: how much of the way from the starting place to the front is behind
   the customer. At the front (position 1) the bar is full. */
export function progress(start, position) {
  if (typeof position !== "number" || typeof start !== "number") return 0;
  if (position <= 1) return 1;
  if (start <= 1) return 0;
  return Math.min(1, Math.max(0, (start - position) / (start - 1)));
}

export function aheadText(position) {
  if (typeof position !== "number") return "";
  if (position <= 1) return "You are next.";
  const ahead = position - 1;
  return ahead.toLocaleString("en") + (ahead === 1 ? " person" : " people") + " ahead of you.";
}
