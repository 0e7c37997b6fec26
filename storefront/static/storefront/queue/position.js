/* Position maths of the waiting room. Pure: no DOM, no clock, no network.
   (Where a page stands in the line, from the public line state: line.js.) */

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
