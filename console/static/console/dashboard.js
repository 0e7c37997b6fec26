// The event dashboard refreshes itself: every few seconds it asks the JSON
// view for every figure and writes each into the elements whose data-key
// names it. A failed request keeps the last figures and says so.
(function () {
  "use strict";
  const root = document.getElementById("fq-dashboard");
  if (!root) return;
  const every = Number(root.dataset.refresh || 5) * 1000;
  const stale = root.querySelector(".fq-stale");

  function show(figures) {
    for (const el of root.querySelectorAll("[data-key]")) {
      const value = figures[el.dataset.key];
      if (value !== undefined && el.textContent !== value) el.textContent = value;
    }
  }

  async function refresh() {
    try {
      const answer = await fetch(root.dataset.url, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (!answer.ok) throw new Error(String(answer.status));
      show(await answer.json());
      stale.hidden = true;
    } catch (error) {
      stale.hidden = false;
    } finally {
      window.setTimeout(refresh, every);
    }
  }

  show(JSON.parse(document.getElementById("fq-figures").textContent));
  window.setTimeout(refresh, every);
})();
