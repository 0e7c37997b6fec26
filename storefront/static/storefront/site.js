/* Every page: the header's account box (who is signed in, sign out) and
   times shown in the visitor's own time zone. */
import { api, session } from "./lib/api.js";
import { localTimes } from "./lib/format.js";

export function signinHref() {
  const box = document.getElementById("fq-account");
  const base = (box && box.getAttribute("data-signin-url")) || "/signin/";
  return base + "?next=" + encodeURIComponent(window.location.pathname);
}

export function renderAccount() {
  const box = document.getElementById("fq-account");
  if (!box) return;
  box.textContent = "";
  const s = session.get();
  if (!s) {
    if (window.location.pathname.indexOf("/signin/") === 0) return;
    const link = document.createElement("a");
    link.href = signinHref();
    link.textContent = "Sign in";
    box.appendChild(link);
    return;
  }
  const mine = document.createElement("a");
  mine.href = box.getAttribute("data-tickets-url") || "/tickets/";
  mine.textContent = "My tickets";
  const who = document.createElement("span");
  who.className = "who";
  who.textContent = s.email || "Signed in";
  const out = document.createElement("button");
  out.type = "button";
  out.className = "secondary";
  out.textContent = "Sign out";
  out.addEventListener("click", async () => {
    // The server forgets the token too: a copy left anywhere stops working.
    await api("POST", "/api/v1/auth/logout/");
    session.clear();
    window.location.reload();
  });
  box.append(mine, who, out);
}

session.onEnd(renderAccount);
renderAccount();
localTimes(document.getElementById("main"));
