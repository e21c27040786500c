// Two small SVG charts of the last hour, one value (or stack of values) per minute.
import { clockTime, h, zoneName } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const WIDTH = 600;
const HEIGHT = 120;

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  el.append(...children);
  return el;
}

// An empty chart says so in words: a flat line could be read as "all quiet" or "not loaded".
function frame(caption, top, body, minutes, empty) {
  const plot = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT + 16}`, role: "img", "aria-label": caption },
    svg("line", { x1: 0, x2: WIDTH, y1: HEIGHT, y2: HEIGHT, class: "axis" }),
    body.length ? svg("text", { x: 2, y: 10, class: "tick" }, top) : "",
    svg("text", { x: 2, y: HEIGHT + 14, class: "tick" }, `${clockTime(minutes[0])} ${zoneName()}`),
    svg("text", { x: WIDTH - 2, y: HEIGHT + 14, class: "tick", "text-anchor": "end" }, "now"),
    ...body,
    body.length ? "" : svg("text", { x: WIDTH / 2, y: HEIGHT / 2, class: "no-data", "text-anchor": "middle" }, empty));
  return h("figure", { class: "chart" }, h("figcaption", {}, caption), plot);
}

// Stacked bars: `series` is [{label, color, values}], each values[i] the count of minute i.
export function bars(caption, minutes, series) {
  const totals = minutes.map((_, i) => series.reduce((sum, s) => sum + s.values[i], 0));
  const top = Math.max(1, ...totals);
  const step = WIDTH / minutes.length;
  const body = minutes.flatMap((minute, i) => {
    let y = HEIGHT;
    const tip = `${clockTime(minute)}: ` + series.map((s) => `${s.label} ${s.values[i]}`).join(", ");
    return series.filter((s) => s.values[i] > 0).map((s) => {
      const height = (s.values[i] / top) * (HEIGHT - 14);
      y -= height;
      return svg("rect", { x: i * step + 1, y, width: Math.max(1, step - 2), height, fill: s.color },
        svg("title", {}, tip));
    });
  });
  return frame(caption, String(top), body, minutes, "No runs in the last hour");
}

// A line through the minutes that have a value; minutes without one leave a gap.
export function line(caption, minutes, values, format) {
  const known = values.filter((v) => v !== null);
  const top = Math.max(1, ...known);
  const step = WIDTH / minutes.length;
  const point = (v, i) => [i * step + step / 2, HEIGHT - (v / top) * (HEIGHT - 14)];
  const runs = [[]];
  values.forEach((v, i) => (v === null ? runs.push([]) : runs[runs.length - 1].push(point(v, i))));
  const body = runs.filter((run) => run.length).map((run) =>
    svg("polyline", { points: run.map((p) => p.join(",")).join(" "), class: "series" }));
  values.forEach((v, i) => {
    if (v === null) return;
    const [x, y] = point(v, i);
    body.push(svg("circle", { cx: x, cy: y, r: 2.5, class: "dot" },
      svg("title", {}, `${clockTime(minutes[i])}: ${format(v)}`)));
  });
  return frame(caption, format(top), body, minutes, "No runs in the last hour, so no lag to show");
}
