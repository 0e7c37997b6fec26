/* The JSON API and the customer's sign-in, shared by every page.

   The customer token lives in localStorage, so a refresh, a second tab and a
   tab reopened tomorrow (within the token's 24 h) stay signed in; everything
   else about the customer's state comes from the API (GET events/{id}/me/),
   never from storage. Signing out clears every fq.* key. */

const SESSION_KEY = "fq.session";
const TOKEN_ERRORS = ["not_authenticated", "invalid_token", "token_expired", "token_revoked"];
const listeners = [];

function storage() {
  try { return window.localStorage; } catch (e) { return null; }  // private mode, blocked storage
}

export const store = {
  get(key) {
    const s = storage();
    try { return s ? JSON.parse(s.getItem(key) || "null") : null; } catch (e) { return null; }
  },
  set(key, value) {
    const s = storage();
    try { if (s) s.setItem(key, JSON.stringify(value)); } catch (e) { /* full or blocked */ }
  },
  remove(key) {
    const s = storage();
    try { if (s) s.removeItem(key); } catch (e) { /* blocked */ }
  },
};

export const session = {
  get() {
    const s = store.get(SESSION_KEY);
    if (!s || !s.token) return null;
    if (s.expires_at && Date.parse(s.expires_at) <= Date.now()) {
      session.clear();
      return null;
    }
    return s;
  },
  set(value) { store.set(SESSION_KEY, value); },
  clear() {
    const s = storage();
    const keys = [];
    try {
      for (let i = 0; s && i < s.length; i++) {
        const k = s.key(i);
        if (k && k.indexOf("fq.") === 0) keys.push(k);
      }
    } catch (e) { /* blocked */ }
    keys.forEach((k) => store.remove(k));
    listeners.forEach((fn) => fn());
  },
  /* Called when the session ends (sign-out, a token the API refuses). */
  onEnd(fn) { listeners.push(fn); },
};

/* One call to the JSON API. Always resolves, never throws:
   {ok, status, data, error: {code, message, details}, retryAfter}. */
export async function api(method, path, options = {}) {
  const headers = { "Accept": "application/json" };
  const s = session.get();
  if (s && !options.anonymous) headers["Authorization"] = "Bearer " + s.token;
  if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
  if (options.challenge) {
    // The bot challenge's widget (when the site has it on) leaves its token
    // here; a token works once, so the widget is reset after the call.
    const answer = document.querySelector("[name=cf-turnstile-response]");
    if (answer && answer.value) headers["X-Challenge-Token"] = answer.value;
  }
  // Answers are the customer's own, never cached; a public, cacheable one
  // (the line state) says so with options.cache.
  const init = { method, headers, credentials: "omit", cache: options.cache || "no-store" };
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await window.fetch(path, init);
    if (options.challenge && window.turnstile && window.turnstile.reset) window.turnstile.reset();
  } catch (e) {
    return {
      ok: false, status: 0, data: null, retryAfter: null,
      error: { code: "network", message: "Could not reach FairQueue. Check your connection and try again.", details: {} },
    };
  }
  const retryAfter = parseInt(response.headers.get("Retry-After") || "", 10);
  const text = await response.text().catch(() => "");
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  const result = {
    ok: response.ok, status: response.status, data, error: null,
    retryAfter: isNaN(retryAfter) ? null : retryAfter,
  };
  if (!response.ok) {
    result.error = (data && data.error) || {
      code: "http_" + response.status,
      message: "Something went wrong (" + response.status + "). Please try again.",
      details: {},
    };
    if (response.status === 401 && TOKEN_ERRORS.indexOf(result.error.code) !== -1 && !options.anonymous) {
      session.clear();
    }
  }
  return result;
}

/* A fresh Idempotency-Key. crypto.randomUUID needs a secure context (https or
   localhost); getRandomValues works on a plain-http LAN address too. */
export function newKey() {
  const bytes = new Uint8Array(16);
  window.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => (b < 16 ? "0" : "") + b.toString(16)).join("");
}

/* The error text shown to a person, with the wait when the API gave one. */
export function errorText(r) {
  let message = (r.error && r.error.message) || "Something went wrong. Please try again.";
  if (r.retryAfter && (r.status === 429 || r.status === 503)) {
    message += " Try again in " + r.retryAfter + " s.";
  }
  return message;
}

export function pageConfig() {
  const node = document.getElementById("fq-config");
  return node ? JSON.parse(node.textContent) : {};
}
