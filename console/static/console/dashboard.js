// The event dashboard refreshes itself: every few seconds it asks the JSON
// view for every figure and writes each into the elements whose data-key
// names it, hides the lines whose count is zero, and redraws the charts
// (uPlot, from our own static files). A failed request keeps the last
// figures and says so.
(function () {
  "use strict";
  const root = document.getElementById("fq-dashboard");
  if (!root) return;
  const every = Number(root.dataset.refresh || 5) * 1000;
  const stale = root.querySelector(".fq-stale");
  const charts = {};

  function show(figures) {
    for (const el of root.querySelectorAll("[data-key]")) {
      const value = figures[el.dataset.key];
      if (value !== undefined && el.textContent !== value) el.textContent = value;
    }
    let any = false;
    for (const el of root.querySelectorAll("[data-hide-zero]")) {
      el.hidden = figures[el.dataset.hideZero] === "0";
      any = any || !el.hidden;
    }
    const none = root.querySelector(".fq-attention-none");
    if (none) none.hidden = any;
    draw(figures.series);
  }

  // --- charts ---------------------------------------------------------------

  const INK = "#0b5cad";
  // Times on the axis as the organizer's clock reads them (14:05, not 2:05pm).
  const clock = (t) => new Date(t * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const QUIET = "#8c959f";

  function options(el, series, extra) {
    return Object.assign(
      {
        width: Math.max(260, el.clientWidth),
        height: 200,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
        axes: [{ stroke: QUIET, values: (u, ticks) => ticks.map(clock) }, { stroke: QUIET, size: 56 }],
        series: [{}].concat(series),
      },
      extra || {}
    );
  }

  // uPlot wants one x array shared by every series: the sold line, the
  // inventory and the projection are laid on the union of their times.
  function soldData(s) {
    const times = s.t.slice();
    const proj = s.projection || [];
    for (const [t] of proj) if (!times.includes(t)) times.push(t);
    times.sort((a, b) => a - b);
    const sold = times.map((t) => {
      const i = s.t.indexOf(t);
      return i >= 0 ? s.sold[i] : null;
    });
    const projected = times.map((t) => {
      const p = proj.find(([pt]) => pt === t);
      return p ? p[1] : null;
    });
    const inventory = times.map(() => s.inventory);
    return [times, sold, projected, inventory];
  }

  const KINDS = {
    sold: {
      data: soldData,
      series: [
        { label: "sold", stroke: INK, width: 2, fill: "rgba(11,92,173,.08)" },
        { label: "projected", stroke: INK, width: 2, dash: [6, 5], spanGaps: true },
        { label: "tickets", stroke: QUIET, width: 1, dash: [2, 4] },
      ],
    },
    waiting: {
      data: (s) => [s.t, s.waiting],
      series: [{ label: "waiting", stroke: "#8a5a00", width: 2, fill: "rgba(138,90,0,.08)" }],
    },
    admitted: {
      data: (s) => [s.t, s.admitted_per_minute],
      series: [{ label: "admitted / min", stroke: "#1a7f37", width: 2, fill: "rgba(26,127,55,.08)" }],
    },
  };

  function draw(series) {
    if (!series || typeof uPlot === "undefined") return;
    const empty = !series.t.length;
    const note = root.querySelector(".fq-no-series");
    if (note) note.hidden = !empty;
    for (const [name, kind] of Object.entries(KINDS)) {
      const el = document.getElementById("fq-chart-" + name);
      if (!el) continue;
      el.closest(".fq-chart").hidden = empty;
      if (empty) continue;
      const data = kind.data(series);
      if (charts[name]) charts[name].setData(data);
      else charts[name] = new uPlot(options(el, kind.series), data, el);
      // What the chart shows last, for a reader (and a test) without the canvas.
      el.dataset.last = String(data[1].filter((v) => v !== null).slice(-1)[0]);
    }
  }

  window.addEventListener("resize", () => {
    for (const [name, chart] of Object.entries(charts)) {
      const el = document.getElementById("fq-chart-" + name);
      chart.setSize({ width: Math.max(260, el.clientWidth), height: 200 });
    }
  });

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
