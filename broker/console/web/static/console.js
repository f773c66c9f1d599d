// The throughput panel of the overview: polls /api/throughput (counter
// totals from the broker's own /metrics) every 2 s and shows the rates
// between two polls, with a sparkline of messages in per second.
(function () {
  'use strict';
  const table = document.getElementById('throughput');
  if (!table) return;
  const spark = document.getElementById('spark');
  const keys = ['bytesIn', 'bytesOut', 'messagesIn', 'requests'];
  const history = [];
  let prev = null;

  function fmt(k, v) {
    if (k.startsWith('bytes')) {
      const units = ['B', 'KiB', 'MiB', 'GiB'];
      let i = 0;
      while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
      return v.toFixed(1) + ' ' + units[i] + '/s';
    }
    return v.toFixed(1) + '/s';
  }

  function draw() {
    const w = 600, h = 60, n = 60;
    const pts = history.slice(-n);
    const top = Math.max(1, ...pts);
    const d = pts.map((v, i) => (i ? 'L' : 'M') + (i * w / (n - 1)).toFixed(1) + ' ' + (h - 2 - (v / top) * (h - 4)).toFixed(1)).join(' ');
    spark.innerHTML = '<path d="' + d + '" fill="none" stroke="currentColor" stroke-width="1.5"/>';
  }

  async function poll() {
    try {
      const r = await fetch(table.dataset.src, { cache: 'no-store' });
      const cur = await r.json();
      if (prev) {
        const dt = (cur.time - prev.time) / 1000;
        if (dt > 0) {
          for (const k of keys) {
            const cell = table.querySelector('[data-k="' + k + '"]');
            cell.textContent = fmt(k, Math.max(0, cur[k] - prev[k]) / dt);
          }
          history.push(Math.max(0, cur.messagesIn - prev.messagesIn) / dt);
          draw();
        }
      }
      prev = cur;
    } catch (e) {
      table.querySelector('[data-k="bytesIn"]').textContent = 'unavailable';
    }
    setTimeout(poll, 2000);
  }
  poll();
})();
