/* A small test harness for the pages' pure ES modules, run in headless
   Chromium by tests/browser/test_js_units.py (the browser our customers use,
   and the one the browser tests need anyway: no second JavaScript runtime).
   The project has no npm toolchain; the assertions needed are these four. */

const cases = [];

export function test(name, fn) {
  cases.push({ name, fn });
}

function show(value) {
  try { return JSON.stringify(value); } catch (e) { return String(value); }
}

function same(a, b) {
  return show(a) === show(b);
}

export const assert = {
  equal(actual, expected, message) {
    if (actual !== expected) {
      throw new Error((message ? message + ": " : "") + "expected " + show(expected) + ", got " + show(actual));
    }
  },
  deepEqual(actual, expected, message) {
    if (!same(actual, expected)) {
      throw new Error((message ? message + ": " : "") + "expected " + show(expected) + ", got " + show(actual));
    }
  },
  ok(value, message) {
    if (!value) throw new Error(message || "expected a true value, got " + show(value));
  },
  throws(fn, message) {
    try { fn(); } catch (e) { return; }
    throw new Error(message || "expected an exception");
  },
};

export async function run() {
  const results = [];
  for (const { name, fn } of cases) {
    try {
      await fn();
      results.push({ name, ok: true });
    } catch (e) {
      results.push({ name, ok: false, error: String((e && e.message) || e) });
    }
  }
  return results;
}
