/* The live link of the waiting room: the queue WebSocket, and polling while
   it is down. Knows nothing of panels: it hands messages to `onMessage` and
   says whether it is live through `onLive`. */
import { api, session } from "../lib/api.js";

const POLL_MS = 5000;             // polling while the socket is down: at least this
const POLL_MAX_MS = 30000;        // and at most this apart, the server's hint in between
const SNAPSHOT_MIN_GAP_MS = 3000;

/* Where the queue socket connects. The one place that knows how the socket
   authenticates: a single-use ticket from POST events/{id}/queue/ws-ticket/
   (never the customer token, which proxies would log with the URL).
   null: not signed in (or the API refused the token); throws when no ticket
   could be had right now (the caller retries). */
export async function socketUrl(cfg) {
  if (!session.get()) return null;
  const r = await api("POST", cfg.api + "events/" + cfg.event_id + "/queue/ws-ticket/");
  if (r.status === 401) return null;
  if (!r.ok) throw new Error("no WebSocket ticket (" + r.status + ")");
  let base = cfg.ws_url;
  if (window.location.protocol === "https:") base = base.replace(/^ws:/, "wss:");
  return base + "/ws/events/" + cfg.event_id + "/queue/?ticket=" + encodeURIComponent(r.data.ticket);
}

/* How long to wait before the next poll of the customer's own state (an
   admitted page without its socket): the server's poll_after_seconds,
   within POLL_MS..POLL_MAX_MS, plus up to 2 s so pages do not ask in step.
   (A waiting page reads the public line state instead: line.js nextReadMs.) */
export function pollDelayMs(hintSeconds, random = Math.random) {
  const hinted = typeof hintSeconds === "number" ? hintSeconds * 1000 : POLL_MS;
  return Math.min(POLL_MAX_MS, Math.max(POLL_MS, hinted)) + random() * 2000;
}

export class LiveLink {
  /* poll(): one round trip standing in for the socket; returns a promise of
     the milliseconds until the next one (null: stop polling).
     onClose(code): 4401 sign-in lost (the ticket endpoint refused the token),
     4404 no such event (the link stops itself). */
  constructor({ cfg, onMessage, onLive, poll, onOpen, onClose }) {
    Object.assign(this, { cfg, onMessage, onLive, poll, onOpen, onClose });
    this.socket = null;
    this.wanted = false;
    this.retries = 0;
    this.reconnectTimer = null;
    this.pollTimer = null;
    this.lastAsk = 0;
  }

  start() {
    this.wanted = true;
    if (this.socket || this.reconnectTimer) return;
    if (typeof window.WebSocket !== "function") { this.startPolling(); return; }
    this.open();
  }

  stop() {
    this.wanted = false;
    window.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.stopPolling();
    if (this.socket) {
      const ws = this.socket;
      this.socket = null;
      ws.onclose = null;
      ws.close(1000);
    }
  }

  isOpen() { return this.socket !== null && this.socket.readyState === 1; }

  /* A fresh snapshot of our own place over the socket; false when the
     socket is not open (the caller asks over HTTP) or one was asked for
     less than SNAPSHOT_MIN_GAP_MS ago. */
  ask() {
    const now = Date.now();
    if (!this.isOpen() || now - this.lastAsk < SNAPSHOT_MIN_GAP_MS) return false;
    this.lastAsk = now;
    this.socket.send(JSON.stringify({ type: "position" }));
    return true;
  }

  async open() {
    this.reconnectTimer = null;
    if (!this.wanted) return;
    let url;
    try {
      url = await socketUrl(this.cfg);
    } catch (e) {
      this.down(null);
      return;
    }
    if (!this.wanted || this.socket) return;
    if (!url) { this.down(4401); return; }  // signed out
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      this.down(null);
      return;
    }
    this.socket = ws;
    ws.onopen = () => {
      this.retries = 0;
      this.onLive(true);
      this.stopPolling();
      if (this.onOpen) this.onOpen();
    };
    ws.onmessage = (e) => {
      let message;
      try { message = JSON.parse(e.data); } catch (err) { return; }
      this.onMessage(message);
    };
    ws.onclose = (e) => {
      if (this.socket === ws) this.socket = null;
      this.onLive(false);
      // The socket's 4401 is a spent or late ticket: reconnect with a new one
      // (a signed-out customer is told so by the ticket endpoint instead).
      this.down(e.code === 4401 ? null : e.code);
    };
  }

  down(code) {
    if (!this.wanted) return;
    if (code === 4401 || code === 4404) {
      this.stop();
      if (this.onClose) this.onClose(code);
      return;
    }
    this.startPolling();
    if (code === 4403) return;  // this origin may not open the socket: polling only
    const delay = Math.min(30000, 1000 * Math.pow(2, this.retries++)) * (0.5 + Math.random());
    this.reconnectTimer = window.setTimeout(() => this.open(), delay);
  }

  startPolling() {
    if (this.pollTimer) return;
    const next = (ms) => {
      this.pollTimer = window.setTimeout(async () => {
        if (!this.wanted || this.isOpen()) { this.pollTimer = null; return; }
        const after = await this.poll();
        if (this.pollTimer !== null && typeof after === "number") next(after);
        else this.pollTimer = null;
      }, ms);
    };
    next(pollDelayMs(null));
  }

  stopPolling() {
    window.clearTimeout(this.pollTimer);
    this.pollTimer = null;
  }
}
