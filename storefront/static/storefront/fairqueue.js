/* FairQueue pages: what every page shares (session, API calls, formatting).
   Plain JavaScript, no dependencies. The customer token lives in
   sessionStorage: it is gone when the tab closes. */
(function () {
  "use strict";

  var SESSION_KEY = "fq.session";
  // Currencies without a minor unit (the same list as events/templatetags/money.py).
  var ZERO_DECIMAL = ["BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX",
    "VND", "VUV", "XAF", "XOF", "XPF"];
  var TOKEN_ERRORS = ["not_authenticated", "invalid_token", "token_expired"];

  function storageGet(key) {
    try { return JSON.parse(window.sessionStorage.getItem(key) || "null"); } catch (e) { return null; }
  }
  function storageSet(key, value) {
    try { window.sessionStorage.setItem(key, JSON.stringify(value)); } catch (e) { /* private mode */ }
  }
  function storageRemove(key) {
    try { window.sessionStorage.removeItem(key); } catch (e) { /* private mode */ }
  }

  var session = {
    get: function () {
      var s = storageGet(SESSION_KEY);
      if (!s || !s.token) return null;
      if (s.expires_at && Date.parse(s.expires_at) <= Date.now()) {
        session.clear();
        return null;
      }
      return s;
    },
    set: function (value) { storageSet(SESSION_KEY, value); },
    clear: function () {
      var keys = [];
      try {
        for (var i = 0; i < window.sessionStorage.length; i++) {
          var k = window.sessionStorage.key(i);
          if (k && k.indexOf("fq.") === 0) keys.push(k);
        }
      } catch (e) { /* private mode */ }
      keys.forEach(storageRemove);
    },
  };

  /* One call to the JSON API. Always resolves, never throws:
     {ok, status, data, error: {code, message, details}, retryAfter}. */
  function api(method, path, options) {
    options = options || {};
    var headers = { "Accept": "application/json" };
    var s = session.get();
    if (s && !options.anonymous) headers["Authorization"] = "Bearer " + s.token;
    if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
    if (options.challenge) {
      // The bot challenge's widget (when the site has it on) leaves its token
      // here; a token works once, so the widget is reset after the call.
      var answer = document.querySelector("[name=cf-turnstile-response]");
      if (answer && answer.value) headers["X-Challenge-Token"] = answer.value;
    }
    var init = { method: method, headers: headers, credentials: "omit", cache: "no-store" };
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(options.body);
    }
    return window.fetch(path, init).then(function (response) {
      if (options.challenge && window.turnstile && window.turnstile.reset) window.turnstile.reset();
      var retryAfter = parseInt(response.headers.get("Retry-After") || "", 10);
      return response.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        var result = {
          ok: response.ok, status: response.status, data: data, error: null,
          retryAfter: isNaN(retryAfter) ? null : retryAfter,
        };
        if (!response.ok) {
          result.error = (data && data.error) || {
            code: "http_" + response.status,
            message: "Something went wrong (" + response.status + "). Please try again.",
            details: {},
          };
          if (response.status === 401 && TOKEN_ERRORS.indexOf(result.error.code) !== -1) {
            session.clear();
            renderAccount();
          }
        }
        return result;
      });
    }, function () {
      return {
        ok: false, status: 0, data: null, retryAfter: null,
        error: { code: "network", message: "Could not reach FairQueue. Check your connection and try again.", details: {} },
      };
    });
  }

  function groupThousands(digits) {
    return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  /* Minor units to text, exactly as the server renders it: "NGN 5,000.00". */
  function money(minor, currency) {
    currency = String(currency || "").toUpperCase();
    var n = Math.round(Number(minor));
    if (!isFinite(n)) return "";
    var sign = n < 0 ? "-" : "";
    n = Math.abs(n);
    if (ZERO_DECIMAL.indexOf(currency) !== -1) return currency + " " + sign + groupThousands(String(n));
    var whole = Math.floor(n / 100), cents = n % 100;
    return currency + " " + sign + groupThousands(String(whole)) + "." + (cents < 10 ? "0" : "") + cents;
  }

  /* A fresh Idempotency-Key. crypto.randomUUID needs a secure context (https or
     localhost); getRandomValues works on a plain-http LAN address too. */
  function newKey() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b < 16 ? "0" : "") + b.toString(16); }).join("");
  }

  /* 299 -> "4:59", 3725 -> "1:02:05". */
  function clock(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    var h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    var mm = h ? (m < 10 ? "0" : "") + m : String(m);
    return (h ? h + ":" : "") + mm + ":" + (s < 10 ? "0" : "") + s;
  }

  /* An ETA in words: "less than a minute", "about 3 minutes", "about 2 hours". */
  function wait(seconds) {
    if (seconds === null || seconds === undefined || !isFinite(seconds)) return "";
    if (seconds < 60) return "less than a minute";
    var minutes = Math.round(seconds / 60);
    if (minutes < 90) return "about " + minutes + " minute" + (minutes === 1 ? "" : "s");
    var hours = Math.round(minutes / 60);
    return "about " + hours + " hour" + (hours === 1 ? "" : "s");
  }

  /* <time datetime> elements: show the visitor's local time, keep UTC as a tooltip. */
  function localTimes(root) {
    var nodes = (root || document).querySelectorAll("time[datetime]");
    Array.prototype.forEach.call(nodes, function (node) {
      var when = new Date(node.getAttribute("datetime"));
      if (isNaN(when.getTime())) return;
      node.title = node.textContent.trim();
      try {
        node.textContent = when.toLocaleString(undefined, {
          weekday: "short", day: "numeric", month: "short", year: "numeric",
          hour: "2-digit", minute: "2-digit", timeZoneName: "short",
        });
      } catch (e) { /* keep the UTC text */ }
    });
  }

  function signinHref() {
    var box = document.getElementById("fq-account");
    var base = (box && box.getAttribute("data-signin-url")) || "/signin/";
    return base + "?next=" + encodeURIComponent(window.location.pathname);
  }

  /* The header: who is signed in, and a way out. */
  function renderAccount() {
    var box = document.getElementById("fq-account");
    if (!box) return;
    box.textContent = "";
    var s = session.get();
    if (!s) {
      if (window.location.pathname.indexOf("/signin/") === 0) return;
      var link = document.createElement("a");
      link.href = signinHref();
      link.textContent = "Sign in";
      box.appendChild(link);
      return;
    }
    var who = document.createElement("span");
    who.textContent = s.email ? "Signed in as " + s.email : "Signed in";
    var out = document.createElement("button");
    out.type = "button";
    out.className = "secondary";
    out.textContent = "Sign out";
    out.addEventListener("click", function () {
      // The server forgets the token too (a copy left anywhere stops working).
      api("POST", "/api/v1/auth/logout/").then(function () {
        session.clear();
        window.location.reload();
      });
    });
    box.appendChild(who);
    box.appendChild(out);
  }

  window.FQ = {
    session: session,
    store: { get: storageGet, set: storageSet, remove: storageRemove },
    api: api,
    money: money,
    number: function (n) { return groupThousands(String(n)); },
    newKey: newKey,
    clock: clock,
    wait: wait,
    localTimes: localTimes,
    signinHref: signinHref,
    renderAccount: renderAccount,
    config: function () {
      var node = document.getElementById("fq-config");
      return node ? JSON.parse(node.textContent) : {};
    },
  };

  function start() {
    renderAccount();
    localTimes(document.getElementById("main"));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
