// One workflow run: its tasks as a graph (SVG, a column per depth, coloured by state), each task
// linked to its current execution, the task table, and re-running a failed run.
import { get, post } from "../api.js";
import { act, badge, confirmAction, fill, h, table, toast, when } from "../dom.js";
import { jobLink, jobNames } from "../names.js";

const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 150;
const NODE_H = 34;
const COL_GAP = 70;
const ROW_GAP = 14;
const PAD = 10;
const ENDED = ["succeeded", "failed"];
// Fill and text colour by task state (the badges' palette).
const COLOURS = {
  succeeded: ["#e3f4ea", "#146c3b"],
  failed: ["#fde8e8", "#a32021"],
  dead: ["#fde8e8", "#a32021"],
  cancelled: ["#fde8e8", "#a32021"],
  upstream_failed: ["#f1f1f1", "#a32021"],
  running: ["#e4effb", "#1d5fa8"],
  retry_wait: ["#fdf1dc", "#8a5a00"],
  pending: ["#f4f1fb", "#5b3fa0"],
  waiting: ["#ffffff", "#666666"],
};

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  el.append(...children);
  return el;
}

function current(task) {
  return task.executions.length ? task.executions[task.executions.length - 1] : null;
}

// Lay the tasks out: a column per depth, a row per task within it (definition order); on a phone
// (the stylesheet's 700 px) a row per depth instead, since five tasks side by side are wider than
// the screen. Each box's `from`/`to` is where an edge leaves or enters it.
function layout(tasks, across) {
  const slots = new Map();
  const at = new Map();
  const [stepX, stepY] = across ? [NODE_W + COL_GAP, NODE_H + ROW_GAP] : [NODE_W + ROW_GAP, NODE_H + COL_GAP];
  for (const task of tasks) {
    const slot = slots.get(task.depth) || 0;
    slots.set(task.depth, slot + 1);
    const [column, row] = across ? [task.depth, slot] : [slot, task.depth];
    const x = PAD + column * stepX;
    const y = PAD + row * stepY;
    at.set(task.id, across
      ? { x, y, from: [x + NODE_W, y + NODE_H / 2], to: [x, y + NODE_H / 2] }
      : { x, y, from: [x + NODE_W / 2, y + NODE_H], to: [x + NODE_W / 2, y] });
  }
  const depths = Math.max(...slots.keys()) + 1;
  const widest = Math.max(...slots.values());
  const [columns, rows] = across ? [depths, widest] : [widest, depths];
  return { at, width: PAD * 2 + columns * stepX - (stepX - NODE_W), height: PAD * 2 + rows * stepY - (stepY - NODE_H) };
}

// A curve from an upstream box to a downstream one, bending along the direction the graph runs.
function edge([x1, y1], [x2, y2], across) {
  const bend = across ? `${(x1 + x2) / 2},${y1} ${(x1 + x2) / 2},${y2}` : `${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2}`;
  return svg("path", { d: `M${x1},${y1} C${bend} ${x2},${y2}`, class: "edge",
    fill: "none", stroke: "#9aa3ad", "stroke-width": "1.2" });
}

// `label` names the picture for assistive technology (the job page shows a workflow's graph too).
// The picture shrinks to its panel's width rather than hiding tasks past the panel's edge.
export function graph(run, label = "Run graph") {
  if (!run.tasks.length) return null;
  const across = !matchMedia("(max-width: 700px)").matches;
  const { at, width, height } = layout(run.tasks, across);
  const edges = run.tasks.flatMap((task) => task.depends_on.map((up) => edge(at.get(up).from, at.get(task.id).to, across)));
  const nodes = run.tasks.map((task) => {
    const { x, y } = at.get(task.id);
    const [fill, ink] = COLOURS[task.state] || COLOURS.waiting;
    const execution = current(task);
    const box = svg("g", { class: `node s-${task.state}`, "data-task": task.id },
      svg("title", {}, `${task.id}: ${task.state.replace("_", " ")}`),
      svg("rect", { x, y, width: NODE_W, height: NODE_H, rx: 6, fill, stroke: ink, "stroke-width": "1" }),
      svg("text", { x: x + 8, y: y + 14, fill: ink, "font-size": "12", "font-weight": "600" },
        task.id.length > 20 ? `${task.id.slice(0, 19)}…` : task.id),
      svg("text", { x: x + 8, y: y + 27, fill: ink, "font-size": "10" },
        task.state.replace("_", " ") + (execution ? ` · attempt ${execution.attempt}` : "")));
    return execution ? svg("a", { href: `#/executions/${execution.id}` }, box) : box;
  });
  return h("div", { class: "panel run-graph" },
    svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": `${label}: ${run.tasks.length} tasks` }, ...edges, ...nodes));
}

function taskRow(task) {
  const execution = current(task);
  return h("tr", {},
    h("td", {}, h("span", { class: "mono" }, task.id)),
    h("td", {}, badge(task.state)),
    h("td", {}, task.depends_on.join(", ") || "–"),
    h("td", {}, task.trigger_rule.replace("_", " ")),
    h("td", {}, execution ? h("a", { href: `#/executions/${execution.id}` }, `attempt ${execution.attempt}`) : "–"),
    h("td", {}, String(task.generation)),
    h("td", { class: "error-text" }, execution && execution.error ? execution.error : ""));
}

export async function run(main, id) {
  const view = h("div");
  main.replaceChildren(view);
  let state = null;

  async function redraw() {
    const r = await get(`/v1/runs/${id}`);
    const names = await jobNames([r.job_id]);
    state = r.state;
    const retry = r.state === "failed" && h("button", { class: "primary", onclick: () => act(retry, async () => {
      if (await confirmAction({ title: "Re-run the failed part of this run?",
        message: "Its failed, dead and not-run tasks run again; tasks that succeeded keep their result.",
        action: "Retry" })) {
        await post(`/v1/runs/${id}/retry`);
        toast("Re-run requested");
        await redraw();
      }
    }) }, "Retry");
    const counts = Object.entries(r.counts).map(([s, n]) => `${n} ${s.replace("_", " ")}`).join(", ");
    fill(view,
      h("div", { class: "title" },
        h("div", {}, h("p", { class: "crumbs" }, h("a", { href: "#/jobs" }, "Jobs"), " / ", jobLink(r.job_id, names), " / run"),
          h("h1", {}, h("span", { class: "mono" }, r.id), " ", badge(r.state))),
        h("div", { class: "actions", role: "group", "aria-label": "Run actions" }, retry)),
      r.error ? h("div", { class: "error", role: "alert" }, r.error) : null,
      h("p", {}, `${r.tasks_total} tasks: ${counts} · generation ${r.generation} · started `,
        when(r.started_at), " · finished ", when(r.finished_at)),
      graph(r),
      h("section", { "aria-label": "Tasks" }, h("h2", {}, "Tasks"),
        table(["task", "state", "after", "rule", "execution", "generation", "error"],
          r.tasks.map(taskRow), "No tasks.")));
  }

  await redraw();
  return { refresh: () => (ENDED.includes(state) ? Promise.resolve() : redraw()), every: 2000 };
}
