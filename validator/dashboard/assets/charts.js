// Small SVG charts for the dashboard, drawn at the width of their container
// (so text keeps its size on a phone). No library: a line chart over windows
// and a (stacked) bar chart over windows are all the dashboard needs.
const SVG = "http://www.w3.org/2000/svg";
export const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                        "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"];

function el(name, attrs = {}, parent = null) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

// About `count` round tick values covering [lo, hi].
export function ticks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

// [lo, hi] widened to whole steps, and its ticks: every drawn value lies
// between the first and the last tick.
export function niceDomain(lo, hi, count = 4) {
  const t = ticks(lo, hi, count);
  if (t.length < 2) return { lo, hi, ticks: t };
  const step = t[1] - t[0];
  if (t[0] > lo) t.unshift(+(t[0] - step).toPrecision(12));
  if (t[t.length - 1] < hi) t.push(+(t[t.length - 1] + step).toPrecision(12));
  return { lo: t[0], hi: t[t.length - 1], ticks: t };
}

export function formatNumber(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
  if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(0) + "k";
  if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
  return String(parseFloat(v.toPrecision(3)));
}

function frame(container, height) {
  container.replaceChildren();
  const width = Math.max(260, Math.floor(container.clientWidth || 600));
  const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });
  container.appendChild(svg);
  return { svg, width, height, left: 52, right: 10, top: 10, bottom: 30 };
}

function empty(container, text) {
  container.replaceChildren();
  const p = document.createElement("p");
  p.className = "empty";
  p.textContent = text;
  container.appendChild(p);
}

function axes(f, xs, yTicks, y, xLabel) {
  const g = el("g", { class: "axis" }, f.svg);
  for (const t of yTicks) {
    el("line", { class: "gridline", x1: f.left, x2: f.width - f.right, y1: y(t), y2: y(t) }, g);
    el("text", { x: f.left - 6, y: y(t) + 4, "text-anchor": "end" }, g).textContent = formatNumber(t);
  }
  el("line", { x1: f.left, x2: f.width - f.right, y1: f.height - f.bottom, y2: f.height - f.bottom }, g);
  for (const [x, label] of xs) {
    el("text", { x, y: f.height - f.bottom + 15, "text-anchor": "middle" }, g).textContent = label;
  }
  el("text", { x: f.width - f.right, y: f.height - 2, "text-anchor": "end" }, g).textContent = xLabel;
}

// series: [{name, points: [[window, value], ...]}]; one <circle class="pt">
// per point (its <title> says window and value), a legend when there are
// several series. Values that are null are gaps.
export function lineChart(container, series, { height = 220, xLabel = "window", format = formatNumber } = {}) {
  const all = series.flatMap((s) => s.points.filter((p) => p[1] !== null && Number.isFinite(p[1])));
  if (all.length === 0) return empty(container, "no data yet");
  const f = frame(container, height);
  let [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { const pad = Math.abs(y0) * 0.05 || 1; y0 -= pad; y1 += pad; }
  const yd = niceDomain(y0, y1, 4);
  [y0, y1] = [yd.lo, yd.hi];
  const x = (v) => f.left + ((v - x0) / (x1 - x0)) * (f.width - f.left - f.right);
  const y = (v) => f.top + (1 - (v - y0) / (y1 - y0)) * (f.height - f.top - f.bottom);
  const xt = ticks(x0, x1, Math.max(2, Math.floor(f.width / 90))).filter((t) => Number.isInteger(t));
  axes(f, xt.map((t) => [x(t), String(t)]), yd.ticks, y, xLabel);
  series.forEach((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    const g = el("g", { class: "series", "data-name": s.name }, f.svg);
    let d = "";
    let pen = false;
    for (const [px, py] of s.points) {
      if (py === null || !Number.isFinite(py)) { pen = false; continue; }
      d += `${pen ? "L" : "M"}${x(px).toFixed(1)},${y(py).toFixed(1)}`;
      pen = true;
    }
    el("path", { d, fill: "none", stroke: color, "stroke-width": 2 }, g);
    for (const [px, py] of s.points) {
      if (py === null || !Number.isFinite(py)) continue;
      const c = el("circle", { class: "pt", cx: x(px), cy: y(py), r: 3, fill: color }, g);
      el("title", {}, c).textContent = `${s.name} · window ${px}: ${format(py)}`;
    }
  });
  if (series.length > 1) legend(container, series.map((s, i) => [s.name, s.color || PALETTE[i % PALETTE.length]]));
}

// windows: [w, ...]; stacks: [{name, color, values: [v per window]}]; one
// <rect class="bar"> per non-zero value, stacked per window.
// counts: whole numbers only on the axis. none: what to say when every value
// is 0. legendAlways: a legend even for one stack.
export function barChart(container, windows, stacks,
                         { height = 220, xLabel = "window", format = formatNumber, counts = false, none = "", legendAlways = false } = {}) {
  if (windows.length === 0) return empty(container, "no windows yet");
  const totals = windows.map((_, i) => stacks.reduce((a, s) => a + (s.values[i] || 0), 0));
  if (none && totals.every((t) => t === 0)) return empty(container, none);
  const f = frame(container, height);
  const top = Math.max(1, ...totals);
  let yt = niceDomain(0, top, 4).ticks;
  if (counts) yt = [...new Set(yt.map((t) => Math.ceil(t)))];
  const yMax = yt[yt.length - 1];
  const y = (v) => f.top + (1 - v / yMax) * (f.height - f.top - f.bottom);
  const band = (f.width - f.left - f.right) / windows.length;
  const xc = (i) => f.left + band * (i + 0.5);
  const every = Math.max(1, Math.ceil(windows.length / Math.max(2, Math.floor(f.width / 60))));
  axes(f, windows.map((w, i) => [xc(i), String(w)]).filter((_, i) => i % every === 0), yt, y, xLabel);
  const bw = Math.max(1, band * 0.7);
  windows.forEach((w, i) => {
    let base = 0;
    for (const s of stacks) {
      const v = s.values[i] || 0;
      if (v <= 0) continue;
      const r = el("rect", { class: "bar", x: xc(i) - bw / 2, y: y(base + v), width: bw,
                              height: Math.max(0.5, y(base) - y(base + v)), fill: s.color, "data-window": w }, f.svg);
      el("title", {}, r).textContent = `window ${w} · ${s.name}: ${format(v)}`;
      base += v;
    }
  });
  if (stacks.length > 1 || legendAlways) legend(container, stacks.map((s) => [s.name, s.color]));
}

function legend(container, entries) {
  const div = document.createElement("div");
  div.className = "legend";
  for (const [name, color] of entries) {
    const span = document.createElement("span");
    const sw = document.createElement("i");
    sw.style.background = color;
    span.append(sw, name);
    div.appendChild(span);
  }
  container.appendChild(div);
}
