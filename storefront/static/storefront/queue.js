/* The waiting room of one event page: join, live position, admission, claim,
   pay, release. Talks to the JSON API with the customer token and listens on
   the queue WebSocket; polls the position endpoint while the socket is down.

   Position pushes: on connect (and when asked with {"type": "position"}) the
   socket sends this customer's snapshot {type: "position", status, position,
   served, ...}. Each admission tick then broadcasts ONE message to the whole
   event, {type: "position", served, admitted, rate_per_second}, without a
   status: every client moves its own place forward by how much `served` grew
   since its snapshot. Its own admission comes on its own group as
   {type: "admitted", admission_token, admission_expires_at}. */
(function () {
  "use strict";

  var cfg = FQ.config();
  var API = cfg.api;
  var EVENT = cfg.event_id;
  var POLL_MS = 5000;             // position polling while the socket is down
  var RESYNC_MS = 120000;         // a fresh snapshot now and then (abandons ahead, pre-queue shuffle)
  var SNAPSHOT_MIN_GAP_MS = 3000;

  var el = function (id) { return document.getElementById(id); };
  var tiersById = {};
  cfg.tiers.forEach(function (t) { tiersById[t.id] = t; });

  var state = {
    phase: null,
    eventStatus: cfg.status,
    position: null,
    served: null,
    rate: null,
    eta: null,
    admission: null,      // {token, expiresAt (ms)}
    admissionLapsed: false,
    claim: null,          // the API's claim body
    claimLapsed: false,
  };
  var socket = null, socketWanted = false, socketRetries = 0, reconnectTimer = null;
  var pollTimer = null, resyncTimer = null, countdownTimer = null, lastSnapshotAsk = 0;
  var pendingClaim = null;  // {text, key}: a retry of the same request reuses its Idempotency-Key

  // --- small helpers --------------------------------------------------------

  function keyFor(name) {
    var s = FQ.session.get();
    return "fq." + name + "." + (s ? s.customer_id : "anon") + "." + EVENT;
  }
  function paymentKey(claimId) { return "fq.payment." + claimId; }

  function setError(message) { el("queue-error").textContent = message || ""; }

  function announce(message) { el("queue-announce").textContent = message; }

  function show(phase) {
    state.phase = phase;
    var panels = document.querySelectorAll("#queue [data-panel]");
    Array.prototype.forEach.call(panels, function (panel) {
      panel.hidden = panel.getAttribute("data-panel") !== phase;
    });
  }

  function busy(button, on, text) {
    button.disabled = on;
    if (text) button.textContent = text;
  }

  function errorText(r) {
    var message = r.error.message || "Something went wrong. Please try again.";
    if (r.retryAfter && (r.status === 429 || r.status === 503)) {
      message += " Try again in " + r.retryAfter + " s.";
    }
    return message;
  }

  function paymentLink(node, claimId) {
    var p = claimId ? FQ.store.get(paymentKey(claimId)) : null;
    if (!p || !p.reference) { node.hidden = true; return; }
    node.querySelector("a").href = cfg.payment_return_url + "?reference=" + encodeURIComponent(p.reference);
    node.hidden = false;
  }

  function done(text, options) {
    options = options || {};
    stopLive();
    show("done");
    el("done-text").textContent = text;
    el("done-actions").hidden = !(options.rejoin && cfg.joinable && state.eventStatus !== "ENDED");
    paymentLink(el("done-payment-link"), options.claimId);
    announce(text);
  }

  // --- the event's own status (paused, sold out, ended) -----------------------

  var STATUS_TEXT = {
    ACTIVE: ["on_sale", "On sale", ""],
    PAUSED: ["paused", "Paused", "Sales are paused. You can join or keep your place; admission resumes when the sale does."],
    SOLD_OUT: ["sold_out", "Sold out", "Sold out for now. Tickets come back when a hold expires unpaid, so you can still wait in line."],
    ENDED: ["ended", "Sale ended", "The sale has ended."],
  };

  function eventStatus(status) {
    state.eventStatus = status;
    var text = STATUS_TEXT[status];
    if (!text) return;
    var badge = el("sale-badge");
    badge.className = "badge badge-" + text[0];
    badge.textContent = text[1];
    el("queue-event-notice").textContent = text[2];
    if (status === "ENDED" && ["join", "waiting", "admitted", "loading"].indexOf(state.phase) !== -1) {
      done("The sale has ended.");
    }
    if (state.phase === "waiting") renderWaiting();
  }

  // --- live updates: the socket, and polling while it is down ------------------

  function setLive(on) {
    var node = el("live");
    node.className = on ? "live on" : "live";
    node.textContent = on ? "Live" : "Reconnecting… checking every few seconds";
  }

  function ensureSocket() {
    socketWanted = true;
    if (socket || reconnectTimer || typeof window.WebSocket !== "function") {
      if (typeof window.WebSocket !== "function") startPolling();
      return;
    }
    openSocket();
  }

  /* The socket's URL with a fresh single-use ticket (POST .../ws-ticket/):
     never the customer token, which proxies would log with the URL.
     Resolves to null when no ticket could be had (then: socketDown). */
  function socketUrl() {
    return FQ.api("POST", API + "events/" + EVENT + "/queue/ws-ticket/").then(function (r) {
      if (!r.ok) return r.status === 401 ? { refused: true } : null;
      var base = cfg.ws_url;
      if (window.location.protocol === "https:") base = base.replace(/^ws:/, "wss:");
      return { url: base + "/ws/events/" + EVENT + "/queue/?ticket=" + encodeURIComponent(r.data.ticket) };
    });
  }

  function openSocket() {
    reconnectTimer = null;
    var s = FQ.session.get();
    if (!s || !socketWanted) return;
    socketUrl().then(function (target) {
      if (!socketWanted || socket) return;
      if (!target) { socketDown(null); return; }
      if (target.refused) { socketDown("signed_out"); return; }
      openSocketAt(target.url);
    });
  }

  function openSocketAt(url) {
    var ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      socketDown(null);
      return;
    }
    socket = ws;
    ws.onopen = function () {
      socketRetries = 0;
      setLive(true);
      stopPolling();
      scheduleResync();
      refreshEvent();
    };
    ws.onmessage = function (e) {
      var message;
      try { message = JSON.parse(e.data); } catch (err) { return; }
      onPush(message);
    };
    ws.onclose = function (e) {
      if (socket === ws) socket = null;
      setLive(false);
      socketDown(e.code);
    };
  }

  function socketDown(code) {
    if (!socketWanted) return;
    // The ticket endpoint refused the customer token (a socket closed with
    // 4401 only had a spent or late ticket: it retries with a new one).
    if (code === "signed_out") {
      FQ.session.clear();
      FQ.renderAccount();
      stopLive();
      show("signin");
      setError("Your sign-in has expired. Please sign in again; your place is kept.");
      return;
    }
    if (code === 4404) {
      done("This event is no longer available.");
      return;
    }
    startPolling();
    if (code === 4403) return;  // this origin may not open the socket: polling only
    var delay = Math.min(30000, 1000 * Math.pow(2, socketRetries++)) * (0.5 + Math.random());
    reconnectTimer = window.setTimeout(openSocket, delay);
  }

  function socketOpen() { return socket !== null && socket.readyState === 1; }

  function startPolling() {
    if (pollTimer) return;
    var polls = 0;
    var next = function () {
      pollTimer = window.setTimeout(function () {
        if (!socketWanted || socketOpen()) { pollTimer = null; return; }
        if (polls++ % 6 === 0) refreshEvent();  // pushes are missed too: pause, sold out
        refreshPosition().then(function () { if (pollTimer !== null) next(); });
      }, POLL_MS + Math.random() * 2000);
    };
    next();
  }

  function stopPolling() {
    window.clearTimeout(pollTimer);
    pollTimer = null;
  }

  function scheduleResync() {
    window.clearTimeout(resyncTimer);
    var delay = RESYNC_MS * (0.75 + Math.random() * 0.5);
    // Pre-queue joiners get their shuffled place at sale start: ask soon after it.
    var untilStart = Date.parse(cfg.sale_start) - Date.now();
    if (untilStart > 0 && untilStart < delay) delay = untilStart + 3000 + Math.random() * 10000;
    resyncTimer = window.setTimeout(function () {
      if (state.phase === "waiting") askSnapshot();
      if (socketWanted) scheduleResync();
    }, delay);
  }

  function stopLive() {
    socketWanted = false;
    window.clearTimeout(reconnectTimer);
    reconnectTimer = null;
    window.clearTimeout(resyncTimer);
    stopPolling();
    if (socket) {
      var ws = socket;
      socket = null;
      ws.onclose = null;
      ws.close(1000);
    }
  }

  function askSnapshot() {
    var now = Date.now();
    if (now - lastSnapshotAsk < SNAPSHOT_MIN_GAP_MS) return;
    lastSnapshotAsk = now;
    if (socketOpen()) socket.send(JSON.stringify({ type: "position" }));
    else refreshPosition();
  }

  function onPush(m) {
    if (!m || typeof m !== "object") return;
    switch (m.type) {
      case "position":
        if (Object.prototype.hasOwnProperty.call(m, "status")) applyPosition(m);
        else onServed(m);
        break;
      case "admitted":
        admitted(m.admission_token, m.admission_expires_at);
        break;
      case "expired":
        expired(m.reason);
        break;
      case "paused":
        eventStatus("PAUSED");
        break;
      case "resumed":
      case "available":
        eventStatus("ACTIVE");
        break;
      case "sold_out":
        eventStatus("SOLD_OUT");
        break;
      case "ended":
        eventStatus("ENDED");
        break;
      default:
        break;
    }
  }

  /* The per-event broadcast of a tick: `served` customers admitted so far. */
  function onServed(m) {
    if (typeof m.rate_per_second === "number" && m.rate_per_second > 0) state.rate = m.rate_per_second;
    if (state.phase !== "waiting") return;
    if (typeof m.served !== "number" || state.served === null) { askSnapshot(); return; }
    var moved = m.served - state.served;
    if (moved === 0) return;
    if (moved < 0) { askSnapshot(); return; }  // the counter was rebuilt: ask for the truth
    state.served = m.served;
    var position = state.position - moved;
    if (position < 1) { askSnapshot(); return; }  // our admission is on its way, or we drifted
    state.position = position;
    state.eta = state.rate ? Math.ceil(position / state.rate) : state.eta;
    renderWaiting();
  }

  // --- the queue ------------------------------------------------------------------

  function refreshPosition() {
    return FQ.api("GET", API + "events/" + EVENT + "/queue/position/").then(function (r) {
      if (r.ok) { applyPosition(r.data); return; }
      var code = r.error.code;
      if (code === "not_in_queue") { applyPosition({ status: null }); return; }
      if (r.status === 401) { stopLive(); show("signin"); return; }
      if (code === "event_not_found") { done("This event is no longer available."); return; }
      if (state.phase === "loading") show("join");
      if (r.status !== 0) setError(errorText(r));  // network blips: the next poll retries
    });
  }

  function applyPosition(body) {
    switch (body.status) {
      case "WAITING":
        var first = state.phase !== "waiting";
        state.position = body.position;
        state.served = typeof body.served === "number" ? body.served : null;
        if (typeof body.eta_seconds === "number") state.eta = body.eta_seconds;
        show("waiting");
        renderWaiting();
        if (first) announce("You are in the queue. Your place: " + body.position + ".");
        ensureSocket();
        break;
      case "ADMITTED":
        admitted(body.admission_token, body.admission_expires_at);
        break;
      case "COMPLETED":
        completed();
        break;
      case "EXPIRED":
        expired(null);
        break;
      default:  // ABANDONED, or not in the queue
        if (["waiting", "admitted", "loading"].indexOf(state.phase) !== -1 || state.phase === null) {
          stopLive();
          show("join");
        }
    }
  }

  function renderWaiting() {
    var position = state.position;
    el("position").textContent = position === null ? "–" : String(position);
    var text;
    if (position === 1) text = "You are next.";
    else if (position !== null) text = (position - 1) + " ahead of you.";
    else text = "";
    if (state.eventStatus === "PAUSED") text += " Admission is paused.";
    else if (state.eta !== null && state.eta !== undefined) text += " Estimated wait: " + FQ.wait(state.eta) + ".";
    el("eta").textContent = text;
  }

  function join() {
    var button = el("join-button"), rejoin = el("rejoin-button");
    setError("");
    busy(button, true, "Joining…");
    rejoin.disabled = true;
    FQ.api("POST", API + "events/" + EVENT + "/queue/", { challenge: true }).then(function (r) {
      busy(button, false, "Join the queue");
      rejoin.disabled = false;
      if (r.ok) { applyPosition(r.data); return; }
      var code = r.error.code;
      if (code === "already_in_queue") { refreshPosition(); return; }
      if (code === "already_claimed") { alreadyHolding(r.error); return; }
      if (r.status === 401) { show("signin"); setError("Please sign in again."); return; }
      setError(errorText(r));
    });
  }

  function leave() {
    var button = el("leave-button");
    setError("");
    busy(button, true, "Leaving…");
    FQ.api("DELETE", API + "events/" + EVENT + "/queue/").then(function (r) {
      busy(button, false, "Leave the queue");
      if (r.ok || r.error.code === "not_in_queue") {
        stopLive();
        show("join");
        announce("You left the queue.");
        return;
      }
      if (r.error.code === "invalid_transition") { refreshPosition(); return; }
      setError(errorText(r));
    });
  }

  function expired(reason) {
    state.admission = null;
    if (reason === "sale_ended") { done("The sale has ended."); return; }
    if (state.phase === "claim" || state.phase === "done") return;
    done("Your turn passed before you chose tickets. You can join the queue again.", { rejoin: true });
  }

  /* The last queue entry ended in a claim. That claim may still hold tickets,
     or may have been released since (then the customer may queue again). */
  function completed() {
    var claimId = FQ.store.get(keyFor("claim"));
    var shown = claimId ? loadClaim(claimId) : Promise.resolve(false);
    shown.then(function (isShown) {
      if (!isShown) { stopLive(); show("join"); }
    });
  }

  /* The API says this customer holds tickets for the event already, and
     names the claim (this tab may never have seen it: another tab, a lost answer). */
  function alreadyHolding(error) {
    var named = error && error.details && error.details.claim_id;
    if (named) FQ.store.set(keyFor("claim"), named);
    var claimId = FQ.store.get(keyFor("claim"));
    var shown = claimId ? loadClaim(claimId) : Promise.resolve(false);
    shown.then(function (isShown) {
      if (!isShown) {
        done("You already hold tickets for this event (claimed in another tab or on another device).");
      }
    });
  }

  // --- admitted: choose and hold tickets ---------------------------------------------

  function admitted(token, expiresAt) {
    if (!token) { refreshPosition(); return; }
    var first = state.phase !== "admitted";
    state.admission = { token: token, expiresAt: Date.parse(expiresAt) };
    state.admissionLapsed = false;
    if (first) {
      setError("");
      show("admitted");
      el("claim-button").disabled = false;
      announce("It is your turn. Choose your tickets.");
      refreshEvent();
      var choice = document.querySelector("#claim-form input[name=tier_id]:checked");
      if (choice) choice.focus();
    }
    socketWanted = true;  // stay connected: an expiry is pushed too
    startCountdown();
  }

  /* The event as it is now: its status (a push may have been missed while
     the socket was down) and the tiers' availability. */
  function refreshEvent() {
    return FQ.api("GET", API + "events/" + EVENT + "/", { anonymous: true }).then(function (r) {
      if (!r.ok || !r.data || !r.data.tiers) return;
      if (r.data.status && r.data.status !== state.eventStatus) eventStatus(r.data.status);
      r.data.tiers.forEach(function (tier) {
        var n = tier.available;
        if (typeof n !== "number") return;
        var text = n <= 0 ? "Sold out" : FQ.number(n) + " left";
        var cell = document.querySelector('[data-tier-available="' + tier.id + '"]');
        if (cell) cell.textContent = text;
        var label = document.querySelector('[data-tier-available-choice="' + tier.id + '"]');
        if (label) label.textContent = "(" + text.toLowerCase() + ")";
        var radio = document.querySelector('#claim-form input[value="' + tier.id + '"]');
        if (radio) radio.disabled = n <= 0;
      });
      var checked = document.querySelector("#claim-form input[name=tier_id]:checked");
      if (!checked || checked.disabled) {
        var open = document.querySelector("#claim-form input[name=tier_id]:not([disabled])");
        if (open) open.checked = true;
      }
    });
  }

  function submitClaim(e) {
    e.preventDefault();
    if (!state.admission) return;
    var tier = document.querySelector("#claim-form input[name=tier_id]:checked");
    if (!tier) { setError("Choose a ticket tier."); return; }
    var body = {
      admission_token: state.admission.token,
      tier_id: tier.value,
      quantity: parseInt(el("quantity").value, 10),
    };
    var text = JSON.stringify(body);
    if (!pendingClaim || pendingClaim.text !== text) pendingClaim = { text: text, key: FQ.newKey() };
    sendClaim(body, 0);
  }

  function sendClaim(body, attempt) {
    var button = el("claim-button");
    setError("");
    busy(button, true, attempt ? "Busy, trying again…" : "Holding…");
    FQ.api("POST", API + "events/" + EVENT + "/claims/", {
      body: body, idempotencyKey: pendingClaim.key,
    }).then(function (r) {
      if (r.ok) {
        pendingClaim = null;
        FQ.store.set(keyFor("claim"), r.data.claim_id);
        busy(button, false, "Hold these tickets");
        showClaim(r.data);
        announce("Your tickets are held. Pay to confirm them.");
        return;
      }
      var code = r.error.code;
      var retryable = r.status === 503 || code === "claim_in_progress" || code === "idempotency_in_progress";
      if (retryable && attempt < 3) {
        window.setTimeout(function () { sendClaim(body, attempt + 1); }, (r.retryAfter || 1) * 1000);
        return;
      }
      busy(button, false, "Hold these tickets");
      // Only a lost answer (network, 5xx) may be replayed with the same key.
      if (r.status !== 0 && r.status < 500) pendingClaim = null;
      if (code === "admission_expired" || code === "admission_invalid") {
        done(r.error.message + " You can join the queue again.", { rejoin: true });
      } else if (code === "already_claimed") {
        alreadyHolding(r.error);
      } else if (code === "sold_out") {
        setError("Those tickets just sold out. Choose another tier if one is left.");
        refreshEvent();
      } else {
        setError(errorText(r));
      }
    });
  }

  // --- a claim: pay or release ---------------------------------------------------------

  function loadClaim(claimId) {
    return FQ.api("GET", API + "claims/" + claimId + "/").then(function (r) {
      if (!r.ok) {
        if (r.status === 404) FQ.store.remove(keyFor("claim"));
        else if (r.status !== 401) setError(errorText(r));
        return false;
      }
      var c = r.data;
      if (c.status === "CLAIMED") { showClaim(c); return true; }
      if (c.status === "CONFIRMED") {
        done("Paid. Your tickets are confirmed.", { claimId: c.claim_id });
        return true;
      }
      FQ.store.remove(keyFor("claim"));
      if (c.release_reason === "expired") {
        el("queue-event-notice").textContent = "Your earlier hold ran out and its tickets went back on sale.";
      }
      return false;
    });
  }

  function showClaim(c) {
    stopLive();
    state.claim = c;
    state.claimLapsed = false;
    show("claim");
    var tier = tiersById[c.tier_id];
    el("claim-tier").textContent = tier ? tier.name : "";
    el("claim-quantity").textContent = String(c.quantity);
    el("claim-amount").textContent = FQ.money(c.amount, c.currency);
    el("pay-button").disabled = false;
    el("release-button").disabled = false;
    paymentLink(el("payment-link"), c.claim_id);
    startCountdown();
    refreshEvent();
  }

  function pay(attemptKey, attempt) {
    var c = state.claim;
    if (!c) return;
    var button = el("pay-button");
    // One key per click; an automatic retry of the same click reuses it. The
    // API keeps one live payment per claim, so a second click cannot pay twice.
    var key = attemptKey || FQ.newKey();
    setError("");
    busy(button, true, "Starting payment…");
    FQ.api("POST", API + "claims/" + c.claim_id + "/payments/", { body: {}, idempotencyKey: key })
      .then(function (r) {
        if (r.ok) {
          FQ.store.set(paymentKey(c.claim_id), { reference: r.data.reference, payment_id: r.data.payment_id });
          if (r.data.authorization_url) {
            button.textContent = "Opening checkout…";
            window.location.assign(r.data.authorization_url);
            return;
          }
          busy(button, false, "Pay");
          paymentLink(el("payment-link"), c.claim_id);
          setError("The payment is still being set up. Try again in a few seconds.");
          return;
        }
        var code = r.error.code;
        if ((r.status === 503 || code === "idempotency_in_progress") && attempt < 3) {
          window.setTimeout(function () { pay(key, attempt + 1); }, (r.retryAfter || 2) * 1000);
          return;
        }
        busy(button, false, "Pay");
        if (code === "already_paid") { loadClaim(c.claim_id); return; }
        if (code === "claim_expired" || code === "claim_not_payable" || code === "claim_not_found") {
          FQ.store.remove(keyFor("claim"));
          done(r.error.message + " Its tickets went back on sale.", { rejoin: true, claimId: c.claim_id });
          return;
        }
        if (code === "payment_refused") FQ.store.remove(keyFor("claim"));
        setError(errorText(r));
      });
  }

  function release() {
    var c = state.claim;
    if (!c) return;
    if (!window.confirm("Release your tickets? They go back on sale and you lose your hold.")) return;
    var button = el("release-button");
    setError("");
    busy(button, true, "Releasing…");
    FQ.api("DELETE", API + "claims/" + c.claim_id + "/").then(function (r) {
      busy(button, false, "Release tickets");
      if (r.ok) {
        FQ.store.remove(keyFor("claim"));
        done("Released. Your tickets went back on sale.", { rejoin: true });
        return;
      }
      if (r.error.code === "invalid_transition") { loadClaim(c.claim_id); return; }
      setError(errorText(r));
    });
  }

  // --- countdowns ------------------------------------------------------------------------

  function startCountdown() {
    if (!countdownTimer) countdownTimer = window.setInterval(tick, 1000);
    tick();
  }

  function tick() {
    var now = Date.now();
    if (state.phase === "admitted" && state.admission) {
      var left = (state.admission.expiresAt - now) / 1000;
      el("admission-countdown").textContent = FQ.clock(left);
      if (left <= 0 && !state.admissionLapsed) {
        state.admissionLapsed = true;
        el("claim-button").disabled = true;
        // The admission tick expires it within seconds (and pushes "expired").
        window.setTimeout(refreshPosition, 6000);
      }
    } else if (state.phase === "claim" && state.claim) {
      var rest = (Date.parse(state.claim.expires_at) - now) / 1000;
      el("claim-countdown").textContent = FQ.clock(rest);
      if (rest <= 0 && !state.claimLapsed) {
        state.claimLapsed = true;
        el("pay-button").disabled = true;
        var claimId = state.claim.claim_id;
        loadClaim(claimId).then(function (shown) {
          if (shown && state.phase === "claim") {
            // Still CLAIMED for a moment: the expiry task (or a payment in flight) decides.
            done("Your hold ran out. If you paid, your payment decides; otherwise the tickets go back on sale.",
              { claimId: claimId, rejoin: true });
          } else if (!shown) {
            done("Your hold ran out and its tickets went back on sale.", { rejoin: true, claimId: claimId });
          }
        });
      }
    } else {
      window.clearInterval(countdownTimer);
      countdownTimer = null;
    }
  }

  // --- start ------------------------------------------------------------------------------

  function start() {
    el("join-button").addEventListener("click", join);
    el("rejoin-button").addEventListener("click", join);
    el("leave-button").addEventListener("click", leave);
    el("claim-form").addEventListener("submit", submitClaim);
    el("pay-button").addEventListener("click", function () { pay(null, 0); });
    el("release-button").addEventListener("click", release);
    // Back from the checkout page through the browser's cache: start afresh.
    window.addEventListener("pageshow", function (e) { if (e.persisted) window.location.reload(); });

    if (!FQ.session.get()) {
      if (cfg.joinable) show("signin");
      return;
    }
    var claimId = FQ.store.get(keyFor("claim"));
    if (!cfg.joinable && !claimId) return;  // the server-rendered "ended"/"opens at" panel stays
    show("loading");
    var claimShown = claimId ? loadClaim(claimId) : Promise.resolve(false);
    claimShown.then(function (shown) {
      if (shown) return;
      if (cfg.joinable) refreshPosition();
      else show("ended");
    });
  }

  start();
})();
