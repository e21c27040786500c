// One job: its schedule in words with the next runs, its settings, the actions, and its recent
// executions as a timeline.
import { del, get, patch, post } from "../api.js";
import { act, badge, confirmAction, fill, h, ms, relative, scheduleText, table, toast, when } from "../dom.js";

const RECENT = 50;

function actions(job, redraw) {
  const name = job.name || job.id;
  const button = (label, confirm, work, danger = false) => {
    const el = h("button", { class: danger ? "danger" : "", onclick: () => act(el, async () => {
      if (await confirmAction({ ...confirm, action: label, danger })) await work();
    }) }, label);
    return el;
  };
  const paused = job.status === "paused";
  return h("div", { class: "actions", role: "group", "aria-label": "Job actions" },
    job.status !== "completed" && button(paused ? "Resume" : "Pause",
      { title: `${paused ? "Resume" : "Pause"} ${name}?`,
        message: paused ? "It runs again from its next occurrence; occurrences missed while paused follow its catch-up policy."
          : "It stops firing until resumed. Executions already started finish." },
      async () => {
        await patch(`/v1/jobs/${job.id}`, { status: paused ? "active" : "paused" });
        toast(`${name} ${paused ? "resumed" : "paused"}`);
        await redraw();
      }),
    button("Trigger now", { title: `Run ${name} now?`, message: "One extra execution starts now, outside the schedule." },
      async () => {
        const run = await post(`/v1/jobs/${job.id}/trigger`);
        toast("Triggered");
        location.hash = job.tasks ? `#/runs/${run.id}` : `#/executions/${run.id}`;
      }),
    button("Delete", { title: `Delete ${name}?`, message: "It never fires again. Its history stays readable until it expires." },
      async () => {
        await del(`/v1/jobs/${job.id}`);
        toast(`${name} deleted`);
        location.hash = "#/jobs";
      }, true));
}

function schedule(job, preview) {
  return h("section", { class: "panel", "aria-label": "Schedule" },
    h("h2", {}, "Schedule"),
    h("p", { class: "words" }, preview.description),
    h("p", {}, h("code", {}, scheduleText(job)), " · time zone ", h("strong", {}, job.time_zone)),
    h("h3", {}, job.status === "paused" ? "Next runs if resumed now" : "Next runs"),
    preview.next_runs.length
      ? h("ol", { class: "next-runs" }, preview.next_runs.map((run) => h("li", {},
        h("time", { datetime: run.at, title: run.at }, run.local.replace("T", " ")),
        h("span", { class: "muted" }, ` ${relative(run.at)}`))))
      : h("p", { class: "muted" }, "None: the schedule has no further occurrence."));
}

function settings(job) {
  const pairs = [
    job.tasks ? ["tasks", `a workflow of ${job.tasks.length} tasks`] : ["target", h("code", {}, job.target)],
    ["priority", job.priority],
    ["retries", job.retry.max_attempts === 1 ? "no retry (1 attempt)"
      : `${job.retry.max_attempts} attempts, ${job.retry.backoff} backoff from ${job.retry.initial_interval} to ${job.retry.max_interval}`],
    ["timeout", `${job.timeout_sec} s`],
    ["catch-up", `${job.catchup} within ${job.catchup_window}`],
    ["overlap", job.overlap],
    ["payload", h("code", {}, JSON.stringify(job.payload))],
    ["created", when(job.created_at)],
    ["version", String(job.version)],
  ];
  return h("section", { class: "panel", "aria-label": "Settings" },
    h("h2", {}, "Settings"),
    h("dl", { class: "pairs" }, pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
}

// Each execution a mark on a time axis by its scheduled time, coloured by state.
function timeline(executions) {
  if (!executions.length) return null;
  const times = executions.map((e) => new Date(e.scheduled_time).getTime());
  const first = Math.min(...times);
  const span = Math.max(1, Math.max(...times) - first);
  return h("div", { class: "timeline", role: "list", "aria-label": "Execution timeline" },
    executions.map((e, i) => h("a", {
      role: "listitem", href: `#/executions/${e.id}`, class: `mark s-${e.state}`,
      style: `left: calc(${((times[i] - first) / span) * 100}% - 5px)`,
      title: `${e.scheduled_time} ${e.state}`,
    })));
}

// A workflow's executions are its runs: each links to the run's graph.
function executionRow(e, workflow) {
  const page = workflow ? "runs" : "executions";
  return h("tr", {},
    h("td", {}, h("a", { href: `#/${page}/${e.id}` }, e.id.split(".").pop())),
    h("td", {}, badge(e.state)),
    h("td", {}, e.trigger),
    h("td", {}, `${e.attempt}/${e.max_attempts}`),
    h("td", {}, when(e.scheduled_time)),
    h("td", {}, ms(e.lag_ms)),
    h("td", { class: "error-text" }, e.error || ""));
}

export async function job(main, id) {
  const header = h("div");
  const body = h("div", { class: "columns" });
  const recent = h("section", { "aria-label": "Recent executions" });
  main.replaceChildren(header, body, recent);

  async function redraw() {
    const [j, preview, page] = await Promise.all([
      get(`/v1/jobs/${id}`), get(`/v1/jobs/${id}/preview?count=5`),
      get(`/v1/jobs/${id}/executions?limit=${RECENT}`),
    ]);
    header.replaceChildren(h("div", { class: "title" },
      h("div", {}, h("p", { class: "crumbs" }, h("a", { href: "#/jobs" }, "Jobs"), " / ", j.id),
        h("h1", {}, j.name || j.id, " ", badge(j.status))),
      actions(j, redraw)));
    body.replaceChildren(schedule(j, preview), settings(j));
    fill(recent, h("h2", {}, "Recent executions"), timeline(page.items),
      table(["execution", "state", "trigger", "attempt", "scheduled", "lag", "error"],
        page.items.map((e) => executionRow(e, Boolean(j.tasks))), "No executions yet."));
  }

  await redraw();
  return { refresh: redraw, every: 2000 };
}
