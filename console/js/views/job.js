// One job: its schedule in words with the next runs, its settings (editable), the actions, its
// backfills in progress (each cancellable), a workflow's graph, and its executions, a page at a time (newest first) with a timeline.
import { del, get, patch, post, query } from "../api.js";
import { RERUN, act, badge, confirmAction, fill, formatTime, h, ms, relative, scheduleText, table, timesIn, toast, when, zoneMode } from "../dom.js";
import { editJob, moreFields } from "../jobform.js";
import { graph } from "./run.js";

const PAGE = 20;

function actions(job, redraw) {
  const name = job.name || job.id;
  const button = (label, confirm, work, danger = false) => {
    const el = h("button", { class: danger ? "danger" : "", onclick: () => act(el, async () => {
      const ok = await confirmAction({ ...confirm, action: label, danger });
      if (ok) await work(ok.chosen);
    }) }, label);
    return el;
  };
  const failing = ["dead", "failed"].includes(job.last_outcome);
  const paused = job.status === "paused";
  return h("div", { class: "actions", role: "group", "aria-label": "Job actions" },
    h("button", { class: "primary", onclick: (event) => act(event.currentTarget, () => editJob(job, redraw)) }, "Edit"),
    job.status !== "completed" && button(paused ? "Resume" : "Pause",
      { title: `${paused ? "Resume" : "Pause"} ${name}?`,
        message: paused ? "It runs again from its next occurrence; occurrences missed while paused follow its catch-up policy."
          : "It stops firing until resumed. Executions already started finish." },
      async () => {
        await patch(`/v1/jobs/${job.id}`, { status: paused ? "active" : "paused" });
        toast(`${name} ${paused ? "resumed" : "paused"}`);
        await redraw();
      }),
    failing && button(`Re-run ${job.last_outcome} executions`,
      { title: `Re-run every ${job.last_outcome} execution of ${name}?`, message: RERUN.now.replace("It runs", "Each runs"), choice: RERUN.asWas },
      async (asWas) => {
        const answer = await post(`/v1/jobs/${job.id}/executions/retry`, { state: job.last_outcome, as_was: asWas });
        const refused = answer.refused.length ? `, ${answer.refused.length} refused: ${answer.refused[0].detail}` : "";
        toast(`Re-ran ${answer.items.length}${refused}${answer.more ? "; more remain, re-run again" : ""}`,
          answer.refused.length ? "error" : "info");
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
    h("p", { class: "words" }, timesIn(preview.description)),
    h("p", {}, h("code", {}, scheduleText(job)), " · time zone ", h("strong", {}, job.time_zone)),
    h("h3", {}, job.status === "paused" ? "Next runs if resumed now" : "Next runs"),
    preview.next_runs.length
      ? h("ol", { class: "next-runs" }, preview.next_runs.map((run) => h("li", {},
        h("time", { datetime: run.at }, formatTime(run.at)),
        h("span", { class: "muted" }, inJobZone(job, run), ` · ${relative(run.at)}`),
        firesLater(run))))
      : h("p", { class: "muted" }, "None: the schedule has no further occurrence."));
}

// With jitter, where in its window the occurrence fires (as `takt jobs get` shows it): the same
// instant for every claim and retry, so it is worth showing before it comes.
function firesLater(run) {
  if (!run.fires_at || run.fires_at === run.at) return null;
  return h("span", { class: "fires" }, " · fires ", h("time", { datetime: run.fires_at }, formatTime(run.fires_at)));
}

// The occurrence on the job's own clock ("06:00 in Europe/Berlin") when that is not the clock the
// page shows, since a cron's hours are the job zone's. An interval or a one-off runs at instants
// no zone's clock moves, so it has none; a cron with a seconds field shows them, or its runs ten
// seconds apart would each read the same minute.
function inJobZone(job, run) {
  const shown = zoneMode() === "utc" ? "UTC" : Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!job.schedule || job.time_zone === shown || (zoneMode() === "utc" && job.time_zone === "Etc/UTC")) return "";
  const clock = run.local.slice(11, 19);
  return ` · ${clock.endsWith(":00") ? clock.slice(0, 5) : clock} in ${job.time_zone}`;
}

// The settings the page lays out itself, then each other field of the API's contract the job
// has a value for (`more`: the job form's "More"), so a field added to the API shows here too.
function settings(job, more) {
  const pairs = [
    job.tasks ? ["tasks", `a workflow of ${job.tasks.length} tasks`] : ["target", h("code", {}, job.target)],
    ["priority", job.priority],
    ["retries", job.retry.max_attempts === 1 ? "no retry (1 attempt)"
      : `${job.retry.max_attempts} attempts, ${job.retry.backoff} backoff from ${job.retry.initial_interval} to ${job.retry.max_interval}`],
    ["timeout", `${job.timeout_sec} s`],
    ["catch-up", `${job.catchup} within ${job.catchup_window}`],
    ["overlap", job.overlap],
    ["daylight saving", `skipped hour: ${job.dst.gap}, repeated hour: ${job.dst.overlap}`],
    ["runs from", job.start_at ? when(job.start_at) : null],
    ["runs until", job.end_at ? when(job.end_at) : null],
    ["jitter", job.jitter ? `each start spread over ${job.jitter}` : null],
    ["paused until", job.pause_until ? when(job.pause_until) : null],
    ["calendars", job.calendars?.length ? job.calendars.join(", ") : null],
    ["payload", h("code", {}, JSON.stringify(job.payload))],
    ["created", when(job.created_at)],
    ["changed", job.updated_at !== job.created_at ? when(job.updated_at) : null],
    ["version", String(job.version)],
    ...more.map(({ name, kind }) => [name.replaceAll("_", " "),
      job[name] === null || job[name] === undefined ? null
        : kind === "json" ? h("code", {}, JSON.stringify(job[name])) : String(job[name])]),
  ].filter(([, v]) => v !== null);
  return h("section", { class: "panel", "aria-label": "Settings" },
    h("h2", {}, "Settings"),
    h("dl", { class: "pairs" }, pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
}

// The job's backfills still running, as `takt jobs get` lists them: the range, how far it got
// (done counts occurrences finished or found already run) and a Cancel for each. Finished and
// cancelled ones stay in `takt jobs backfills`; with none running the section is absent.
function backfills(job, items, redraw) {
  const running = items.filter((b) => b.state === "running");
  if (!running.length) return null;
  const row = (b) => {
    const done = b.started + b.existing - b.running;
    const cancel = h("button", { class: "danger", onclick: () => act(cancel, async () => {
      const ok = await confirmAction({ title: `Cancel backfill ${b.id}?`, action: "Cancel backfill", danger: true,
        message: "None of its remaining occurrences starts, and its executions still running are stopped." });
      if (!ok) return;
      await del(`/v1/jobs/${job.id}/backfills/${b.id}`);
      toast(`Backfill ${b.id} cancelled`);
      await redraw();
    }) }, "Cancel");
    return h("tr", { "data-backfill": b.id },
      h("td", { class: "mono" }, b.id),
      h("td", {}, badge(b.state)),
      h("td", {}, h("time", { datetime: b.from }, formatTime(b.from)), " to ",
        h("time", { datetime: b.to }, formatTime(b.to))),
      h("td", {}, h("progress", { value: done, max: b.total, "aria-label": `${b.id} progress` }), " ",
        `${done} of ${b.total} done, ${b.running} running`,
        b.existing ? h("span", { class: "muted" }, ` (${b.existing} ran already)`) : null),
      h("td", {}, String(b.max_parallel)),
      h("td", {}, when(b.created_at)),
      h("td", {}, cancel));
  };
  return h("section", { class: "panel", "aria-label": "Backfills" },
    h("h2", {}, "Backfills in progress"),
    table(["backfill", "state", "range", "progress", "max parallel", "started", ""], running.map(row), ""));
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
      title: `${formatTime(e.scheduled_time)} ${e.state}`,
    })));
}

// A workflow's executions are its runs: each links to the run's graph.
function executionRow(e, workflow) {
  const page = workflow ? "runs" : "executions";
  return h("tr", {},
    h("td", {}, h("a", { href: `#/${page}/${e.id}` }, e.id.split(".").pop())),
    h("td", {}, badge(e.state)),
    h("td", {}, e.trigger),
    h("td", {}, e.attempt_label),
    h("td", {}, when(e.scheduled_time)),
    h("td", {}, ms(e.lag_ms)),
    // An execution that succeeded in the end keeps its last attempt's error: not shown here.
    h("td", { class: "error-text" }, e.state === "succeeded" ? "" : e.error || ""));
}

// A workflow job's graph: its last run's, coloured by state, else its definition's.
function workflow(job, last) {
  if (!job.tasks) return null;
  if (last) {
    return h("section", { "aria-label": "Workflow" }, h("h2", {}, "Workflow: last run ",
      h("a", { href: `#/runs/${last.id}`, class: "mono" }, last.id.split(".").pop()), " ", badge(last.state)),
    graph(last, "Workflow graph"));
  }
  const depth = new Map();
  const deepest = (task) => {
    if (!depth.has(task.id)) {
      depth.set(task.id, Math.max(-1, ...task.depends_on.map((up) => deepest(job.tasks.find((t) => t.id === up)))) + 1);
    }
    return depth.get(task.id);
  };
  const tasks = job.tasks.map((t) => ({ ...t, depth: deepest(t), state: "waiting", executions: [] }));
  return h("section", { "aria-label": "Workflow" }, h("h2", {}, "Workflow: not run yet"),
    graph({ tasks }, "Workflow graph"));
}

// A job's part the API answers 404 for once the job is deleted: null then (its executions stay
// readable until they expire).
function unlessDeleted(error) {
  if (error.status === 404) return null;
  throw error;
}

export async function job(main, id) {
  const header = h("div");
  const body = h("div", { class: "columns" });
  const backfilling = h("div");
  const flow = h("div");
  const history = h("section", { "aria-label": "Executions" });
  main.replaceChildren(header, body, backfilling, flow, history);
  // The pages seen so far, by the cursor that starts each (the API's, newest first).
  const starts = [null];
  let at = 0;

  // A deleted job's page is its history: what remains of it, with no settings or actions.
  function drawDeleted() {
    header.replaceChildren(h("div", { class: "title" },
      h("div", {}, h("p", { class: "crumbs" }, h("a", { href: "#/jobs" }, "Jobs"), " / ", id),
        h("h1", {}, id, " ", badge("deleted")),
        h("p", { class: "muted" }, "This job was deleted. Its executions stay readable until they expire."))));
    body.replaceChildren();
    fill(backfilling);
    fill(flow);
  }

  async function redraw() {
    const [j, preview, page, runs, more] = await Promise.all([
      get(`/v1/jobs/${id}`).catch(unlessDeleted),
      get(`/v1/jobs/${id}/preview?count=5`).catch(unlessDeleted),
      get(`/v1/jobs/${id}/executions` + query({ limit: PAGE, cursor: starts[at] })),
      get(`/v1/jobs/${id}/backfills`).catch(unlessDeleted),
      // Without the contract the page still shows what it lays out itself.
      moreFields().catch(() => []),
    ]);
    if (j === null || preview === null || runs === null) {
      drawDeleted();
    } else {
      header.replaceChildren(h("div", { class: "title" },
        h("div", {}, h("p", { class: "crumbs" }, h("a", { href: "#/jobs" }, "Jobs"), " / ", j.id),
          h("h1", {}, j.name || j.id, " ", badge(j.status))),
        actions(j, redraw)));
      body.replaceChildren(schedule(j, preview), settings(j, more));
      fill(backfilling, backfills(j, runs.items, redraw));
      // The graph follows the newest run, which only the first page holds.
      if (j.tasks && at === 0) {
        fill(flow, workflow(j, page.items.length ? await get(`/v1/runs/${page.items[0].id}`) : null));
      }
    }
    starts.length = at + 1;
    if (page.next_cursor) starts.push(page.next_cursor);
    const go = (step) => (event) => { at += step; act(event.currentTarget, redraw); };
    const pager = h("nav", { class: "pager", "aria-label": "Execution pages" },
      h("button", { disabled: at === 0, onclick: go(-1) }, "Newer"),
      h("span", { class: "muted" }, `page ${at + 1}`),
      h("button", { disabled: !page.next_cursor, onclick: go(1) }, "Older"));
    fill(history, h("h2", {}, "Executions"), timeline(page.items),
      table(["execution", "state", "trigger", "attempt", "scheduled", "lag", "error"],
        page.items.map((e) => executionRow(e, Boolean(j?.tasks))), at ? "No older executions." : "No executions yet."),
      (at > 0 || page.next_cursor) && pager);
  }

  await redraw();
  return { refresh: redraw, every: 2000 };
}
