// The console's seat map: fetch the drawing again every few seconds so held
// and sold seats show live. Without script the page shows it as drawn.
(() => {
  const box = document.getElementById("fq-seatmap");
  if (!box) return;
  const every = Number(box.dataset.refresh || 5) * 1000;
  const refresh = async () => {
    try {
      const response = await fetch(box.dataset.url, { credentials: "same-origin" });
      if (response.ok) box.innerHTML = await response.text();
    } catch (_) {
      // Offline for a moment: the next round tries again.
    }
  };
  setInterval(refresh, every);
})();
