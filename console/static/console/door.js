/* The door (/events/{id}/check-in/): check a ticket in by the camera (the
   browser's BarcodeDetector where it has one, else qr-scanner's decoder,
   both through qr-scanner from our own static files) or a typed code: POST
   events/{id}/tickets/check-in/ with the organizer's admin session (the
   cookie) and its CSRF token. "N of M in" counts every door's check-ins. */
import QrScanner from "./vendor/qr-scanner/qr-scanner.min.js";

const cfg = JSON.parse(document.getElementById("fq-config").textContent);
const el = (id) => document.getElementById(id);
// The camera reads a code many times a second: one check-in per code; the
// same code again only after this long (the holder has moved on by then, a
// second scan answers "already used").
const SAME_CODE_PAUSE_MS = 15000;

function localDateTime(when) {
  const date = new Date(when);
  if (isNaN(date.getTime())) return "";
  return date.toLocaleString(undefined, {
    weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit",
  });
}

function show(verdict, detail, ok) {
  const box = el("checkin-result");
  box.hidden = false;
  box.className = "panel " + (ok ? "notice ok" : "error");
  el("checkin-verdict").textContent = verdict;
  el("checkin-detail").textContent = detail;
}

function showCount(counts) {
  el("door-in").textContent = counts.in.toLocaleString();
  el("door-of").textContent = counts.of.toLocaleString();
}

async function refreshCount() {
  try {
    const response = await fetch(cfg.count_url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (response.ok) showCount(await response.json());
  } catch (_) {
    // Offline for a moment: the next round tries again.
  }
}

let busy = false;

async function checkIn(code) {
  if (!code || busy) return;
  busy = true;
  const button = el("checkin-button");
  button.disabled = true;
  let response, body = null;
  try {
    response = await fetch(cfg.api + "events/" + cfg.event_id + "/tickets/check-in/", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": cfg.csrf_token, "Accept": "application/json" },
      body: JSON.stringify({ code }),
    });
    body = await response.json().catch(() => null);
  } catch (err) {
    show("No connection", "Could not reach FairQueue. Try again.", false);
    return;
  } finally {
    busy = false;
    button.disabled = false;
  }
  refreshCount();
  if (response.ok) {
    // A reserved seat is what the usher needs; general admission: the ticket's number.
    const which = body.seat_label ? "seat " + body.seat_label : "ticket " + body.seat;
    show("Welcome in", body.tier + " · " + which + " · " + body.holder_email, true);
    return;
  }
  const error = (body && body.error) || { code: "", message: "Something went wrong." };
  const details = error.details || {};
  if (error.code === "ticket_already_used") {
    show("Already used", "Checked in " + localDateTime(details.checked_in_at) + (details.checked_in_by ? " by " + details.checked_in_by.replace(/^staff:/, "") : "") + ".", false);
  } else if (error.code === "ticket_void") {
    show("Void", "This ticket was cancelled (refunded or released). Do not let it in.", false);
  } else if (error.code === "ticket_not_found") {
    show("Not a ticket", "No ticket has this code. Check it was typed right.", false);
  } else {
    show("Not accepted", error.message, false);
  }
}

el("checkin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = el("code");
  const code = input.value.trim();
  await checkIn(code);
  input.value = "";
  input.focus();
});

// --- the camera -------------------------------------------------------------

let scanner = null;
let last = { code: "", at: 0 };

function onScan(result) {
  const code = (result && result.data ? result.data : String(result || "")).trim();
  const now = Date.now();
  if (!code || (code === last.code && now - last.at < SAME_CODE_PAUSE_MS)) return;
  last = { code, at: now };
  checkIn(code);
}

async function toggleCamera() {
  const button = el("camera-button");
  const video = el("camera-view");
  if (scanner) {
    scanner.stop();
    scanner.destroy();
    scanner = null;
    video.hidden = true;
    button.textContent = "Scan with the camera";
    return;
  }
  video.hidden = false;
  scanner = new QrScanner(video, onScan, {
    preferredCamera: "environment",
    maxScansPerSecond: 10,
    highlightScanRegion: true,
    returnDetailedScanResult: true,
  });
  try {
    await scanner.start();
    button.textContent = "Stop the camera";
  } catch (err) {
    scanner.destroy();
    scanner = null;
    video.hidden = true;
    show("No camera", "The camera could not be opened (" + String(err) + "). Type the code instead.", false);
  }
}

// Browsers open a camera only for a page served over https (or from this
// machine itself): on plain http, or with no camera, the panel says why
// instead of hiding, and the typed code is the way in.
function cameraUnavailable(why) {
  el("camera-button").disabled = true;
  el("camera-hint").hidden = true;
  const note = el("camera-unavailable");
  note.textContent = "Camera unavailable: this page needs https and a camera (" + why + "). Type the code below, or use a scanner that types into the box.";
  note.hidden = false;
}

if (!window.isSecureContext || !navigator.mediaDevices) {
  cameraUnavailable("it was opened over plain http");
} else {
  QrScanner.hasCamera().then((has) => {
    if (!has) {
      cameraUnavailable("no camera was found");
      return;
    }
    el("camera-button").disabled = false;
    el("camera-button").addEventListener("click", toggleCamera);
  });
}

setInterval(refreshCount, (cfg.count_refresh || 10) * 1000);
