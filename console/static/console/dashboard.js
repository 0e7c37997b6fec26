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
  const QUIET = "#8c959f";
  const HOUR = 3600;
  // Times on the axis as the organizer's clock reads them (14:05, not
  // 2:05pm), with the day once the chart spans more than most of one.
  const at = (t, parts) => new Date(t * 1000).toLocaleString([], Object.assign({ hourCycle: "h23" }, parts));
  function tickLabel(span) {
    if (span > 7 * 24 * HOUR) return (t) => at(t, { day: "numeric", month: "short" });
    if (span > 20 * HOUR) return (t) => at(t, { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
    return (t) => at(t, { hour: "2-digit", minute: "2-digit" });
  }

  // Where the dashed line leads, in the reader's own time: the sell-out, or
  // (when that is past the sale's end) how many will be sold by then.
  function moment(t) {
    const d = new Date(t * 1000);
    const sameDay = d.toDateString() === new Date().toDateString();
    const parts = sameDay ? { hour: "2-digit", minute: "2-digit" } : { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" };
    return at(t, parts);
  }
  function projectionNote(end) {
    if (!end) return "";
    if (end.kind === "sell_out") return "projected sell-out " + moment(end.at) + " (dashed)";
    return "at this pace " + end.sold.toLocaleString() + " of " + end.inventory.toLocaleString() + " by the sale's end, " + moment(end.at) + " (dashed)";
  }

  // Each chart's x range, read by its scale and its axis at every redraw.
  const ranges = {};

  function options(el, name, series) {
    const range = () => ranges[name];
    const span = () => ranges[name][1] - ranges[name][0];
    return {
      width: Math.max(200, el.clientWidth),
      height: 200,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: {
        // The sale so far (and the projection's look ahead), whatever the points.
        x: { time: true, range: range },
        y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] },
      },
      axes: [
        {
          stroke: QUIET,
          space: () => (span() > 20 * HOUR ? 90 : 50),
          values: (u, ticks) => ticks.map(tickLabel(span())),
        },
        { stroke: QUIET, size: 56 },
      ],
      series: [{}].concat(series),
    };
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
    // No inventory line when the sales are far below it: it would flatten them.
    const inventory = times.map(() => (s.inventory == null ? null : s.inventory));
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
    const projection = root.querySelector(".fq-key-projection");
    if (projection) projection.textContent = projectionNote(series.projection_end);
    for (const [name, kind] of Object.entries(KINDS)) {
      const el = document.getElementById("fq-chart-" + name);
      if (!el) continue;
      el.closest(".fq-chart").hidden = empty;
      if (empty) continue;
      const data = kind.data(series);
      // The sold chart looks ahead as far as its projection; the others end now.
      ranges[name] = name === "sold" ? series.x_range : [series.x_range[0], series.t[series.t.length - 1]];
      if (ranges[name][1] <= ranges[name][0]) ranges[name] = [ranges[name][0], ranges[name][0] + 60];
      if (charts[name]) charts[name].setData(data);
      else charts[name] = new uPlot(options(el, name, kind.series), data, el);
      // What the chart shows last, for a reader (and a test) without the canvas.
      el.dataset.last = String(data[1].filter((v) => v !== null).slice(-1)[0]);
    }
  }

  window.addEventListener("resize", () => {
    for (const [name, chart] of Object.entries(charts)) {
      const el = document.getElementById("fq-chart-" + name);
      chart.setSize({ width: Math.max(200, el.clientWidth), height: 200 });
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
