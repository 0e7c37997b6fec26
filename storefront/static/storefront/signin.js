/* Sign-in page: email -> POST auth/otp/request/, code -> POST auth/otp/verify/.
   The step waiting for the code survives a reload (sessionStorage: phones
   reload the page on the way back from the mail app): the same nonce, so the
   code already emailed still works, and a resend keeps it working too. */
import { api, pageConfig, session } from "./lib/api.js";
import { clock } from "./lib/format.js";

{
  var cfg = pageConfig();
  var el = function (id) { return document.getElementById(id); };
  var emailForm = el("email-form"), codeForm = el("code-form");
  var errorBox = el("signin-error"), noticeBox = el("signin-notice");
  var resendTimer = null, resendAt = 0;
  // Binds the emailed code to this page: otp/verify/ must send it back.
  var nonce = null;
  var PENDING_KEY = "fq.signin.pending";

  function pendingStore(value) {
    try {
      if (value) window.sessionStorage.setItem(PENDING_KEY, JSON.stringify(value));
      else window.sessionStorage.removeItem(PENDING_KEY);
    } catch (e) { /* storage blocked: the step lasts as long as the page */ }
  }

  function pendingLoad() {
    try {
      var p = JSON.parse(window.sessionStorage.getItem(PENDING_KEY) || "null");
      return p && p.nonce && p.email && p.expires_at > Date.now() ? p : null;
    } catch (e) { return null; }
  }

  el("email-button").disabled = false;
  el("code-button").disabled = false;

  if (session.get()) {
    noticeBox.textContent = "You are already signed in. Sign in again below to switch to another email.";
  }

  function showError(error, retryAfter) {
    var message = error.message || "Something went wrong. Please try again.";
    var details = error.details || {};
    if (error.code === "otp_invalid" && typeof details.attempts_left === "number") {
      message += details.attempts_left > 0
        ? " " + details.attempts_left + " attempt" + (details.attempts_left === 1 ? "" : "s") + " left."
        : " Ask for a new code.";
    } else if (error.code === "validation_error" && details.fields) {
      var fields = details.fields;
      var first = (fields.email || fields.code || fields.non_field_errors || [])[0];
      if (first) message = first;
    }
    var wait = retryAfter || details.retry_after;
    if (error.status === 429 || error.code === "rate_limited" || error.code === "otp_resend_too_soon") {
      if (wait) message += " Try again in " + clock(wait) + ".";
    }
    errorBox.textContent = message;
  }

  function clearMessages() {
    errorBox.textContent = "";
    noticeBox.textContent = "";
  }

  function busy(button, on, text) {
    button.disabled = on;
    if (text) button.textContent = text;
  }

  function tickResend() {
    var left = Math.ceil((resendAt - Date.now()) / 1000);
    var button = el("resend-button");
    if (left > 0) {
      button.disabled = true;
      button.textContent = "Send a new code (" + clock(left) + ")";
    } else {
      button.disabled = false;
      button.textContent = "Send a new code";
      window.clearInterval(resendTimer);
      resendTimer = null;
    }
  }

  function startResendTimer(seconds) {
    resendAt = Date.now() + (seconds || 0) * 1000;
    if (resendTimer) window.clearInterval(resendTimer);
    resendTimer = window.setInterval(tickResend, 1000);
    tickResend();
  }

  function requestCode(email, button, idleText) {
    clearMessages();
    busy(button, true, "Sending…");
    var body = { email: email };
    if (nonce && el("code-email").textContent === email) body.nonce = nonce;  // a resend
    return api("POST", cfg.api + "auth/otp/request/", { body: body, anonymous: true, challenge: true })
      .then(function (r) {
        busy(button, false, idleText);
        if (!r.ok) {
          r.error.status = r.status;
          showError(r.error, r.retryAfter);
          if (r.error.code === "otp_resend_too_soon") showCodeForm(email, r.retryAfter);
          return;
        }
        nonce = r.data.nonce;
        var minutes = Math.round((r.data.expires_in || 600) / 60);
        pendingStore({
          email: email, nonce: nonce,
          expires_at: Date.now() + (r.data.expires_in || 600) * 1000,
          resend_at: Date.now() + (r.data.resend_after || 0) * 1000,
        });
        showCodeForm(email, r.data.resend_after);
        noticeBox.textContent = "Code sent. It works for " + minutes + " minute" + (minutes === 1 ? "" : "s") + ".";
      });
  }

  function showCodeForm(email, resendAfter) {
    el("code-email").textContent = email;
    // Development mode sends no email: the code is where the server runs.
    el("code-hint").textContent = cfg.codes_in_terminal
      ? "Development mode: no email is sent. The code is in the terminal running make run (the web lines)."
      : "Check your inbox (and spam folder) for an email from FairQueue.";
    emailForm.hidden = true;
    codeForm.hidden = false;
    startResendTimer(resendAfter || 0);
    el("code").focus();
  }

  emailForm.addEventListener("submit", function (e) {
    e.preventDefault();
    var email = el("email").value.trim();
    if (!email || email.indexOf("@") < 1) {
      errorBox.textContent = "Enter your email address, like name@example.com.";
      el("email").focus();
      return;
    }
    requestCode(email, el("email-button"), "Email me a code");
  });

  el("resend-button").addEventListener("click", function () {
    requestCode(el("code-email").textContent, el("resend-button"), "Send a new code");
  });

  el("other-email-button").addEventListener("click", function () {
    clearMessages();
    pendingStore(null);
    nonce = null;
    codeForm.hidden = true;
    emailForm.hidden = false;
    el("code").value = "";
    el("email").focus();
  });

  codeForm.addEventListener("submit", function (e) {
    e.preventDefault();
    var email = el("code-email").textContent;
    var code = el("code").value.replace(/\s+/g, "");
    if (!/^[0-9]{6}$/.test(code)) {
      errorBox.textContent = "The code is 6 digits.";
      el("code").focus();
      return;
    }
    clearMessages();
    var button = el("code-button");
    busy(button, true, "Signing in…");
    api("POST", cfg.api + "auth/otp/verify/", { body: { email: email, code: code, nonce: nonce }, anonymous: true })
      .then(function (r) {
        if (!r.ok) {
          busy(button, false, "Sign in");
          r.error.status = r.status;
          showError(r.error, r.retryAfter);
          el("code").select();
          return;
        }
        pendingStore(null);
        session.clear();
        session.set({
          token: r.data.token, customer_id: r.data.customer_id,
          expires_at: r.data.expires_at, email: email,
        });
        noticeBox.textContent = "Signed in. Taking you back…";
        window.location.assign(cfg.next || "/");
      });
  });

  // Back after a reload: the code step as it was, the emailed code still good.
  var pending = pendingLoad();
  if (pending) {
    nonce = pending.nonce;
    el("email").value = pending.email;
    showCodeForm(pending.email, Math.max(0, (pending.resend_at - Date.now()) / 1000));
    noticeBox.textContent = "The code we emailed still works: enter it below.";
  }
}
