// Overview: the tenant's jobs and failures, and the deployment's last hour and lanes.
import { get } from "../api.js";
import { bars, line } from "../chart.js";
import { h, ms, table, when } from "../dom.js";

function card(label, value, note, href) {
  const body = [h("div", { class: "value" }, String(value)), h("div", { class: "label" }, label),
    note && h("div", { class: "muted small" }, note)];
  return href ? h("a", { class: "card link", href }, body) : h("div", { class: "card" }, body);
}

// The last minute that is over; the one in progress would show a partial count.
function lastFull(minutes) {
  return minutes[minutes.length - 2] || minutes[minutes.length - 1];
}

// What the hour's counts cover: the last hour, or the time since the metrics began when that is
// later (a restarted `takt local` knows nothing of the minutes before it). As `takt top` says it.
function windowLabel(stats) {
  const since = stats.metrics_since;
  return since && since > stats.minutes[0].minute
    ? `since ${since.slice(11, 16)} UTC (metrics began then)` : "in the last hour";
}

function draw(stats) {
  const minutes = stats.minutes.map((m) => m.minute);
  const runs = (m) => m.succeeded + m.failed + m.dead;
  const current = stats.minutes[stats.minutes.length - 1];
  const lagged = [...stats.minutes].reverse().find((m) => m.lag_p99_ms !== null);
  const waiting = stats.lanes.reduce((sum, lane) => sum + lane.waiting + lane.delayed, 0);
  const t = stats.totals;
  const hour = windowLabel(stats);
  // Runs are executions that ended (one each: succeeded, failed or dead); retries are failed
  // attempts (one per attempt) and are counted apart, never added to runs.
  return [
    h("section", { class: "cards", "aria-label": "Summary" },
      card("active jobs", stats.jobs.active, `${stats.jobs.paused} paused, ${stats.jobs.completed} completed`, "#/jobs"),
      card("executions ended this minute", runs(current),
        `${runs(lastFull(stats.minutes))} last minute, ${t.succeeded + t.failed + t.dead} ${hour}`),
      card("schedule lag p99", lagged ? ms(lagged.lag_p99_ms) : "–", lagged ? `p50 ${ms(lagged.lag_p50_ms)}` : "no runs this hour"),
      card("queued messages", waiting, `${stats.lanes.reduce((s, l) => s + l.in_flight, 0)} in flight`),
      card("dead executions now", stats.dead_executions,
        `${stats.failed_executions} failed now; this tenant, all kept history`, "#/dead")),
    h("section", { class: "charts" },
      bars("Runs per minute", minutes, [
        { label: "succeeded", color: "var(--ok)", values: stats.minutes.map((m) => m.succeeded) },
        { label: "failed or dead", color: "var(--bad)", values: stats.minutes.map((m) => m.failed + m.dead) },
      ]),
      line("Schedule lag p99", minutes, stats.minutes.map((m) => m.lag_p99_ms), ms)),
    h("div", { class: "columns" },
      h("section", {},
        h("h2", {}, "Lanes"),
        table(["lane", "waiting", "in flight", "delayed", "dead-letter queue"],
          stats.lanes.map((l) => h("tr", {}, h("td", {}, l.lane), h("td", {}, l.waiting),
            h("td", {}, l.in_flight), h("td", {}, l.delayed),
            h("td", { class: l.dead_letter ? "bad" : "" }, l.dead_letter))), "No lanes.")),
      h("section", {},
        h("h2", {}, "Failing jobs"),
        table(["job", "last outcome", "when"],
          stats.failing_jobs.map((j) => h("tr", {},
            h("td", {}, h("a", { href: `#/jobs/${j.id}` }, j.name || j.id)),
            h("td", {}, j.last_execution_id
              ? h("a", { href: `#/executions/${j.last_execution_id}` }, j.last_outcome)
              : j.last_outcome),
            h("td", {}, when(j.last_run_at)))),
          "No job's last run failed."))),
    h("section", {},
      h("h2", {}, `Deployment, ${hour}`),
      h("dl", { class: "totals" },
        ...[["scheduled occurrences dispatched", t.dispatched], ["executions succeeded", t.succeeded],
          ["executions failed", t.failed], ["executions dead", t.dead],
          ["attempts retried", t.retried], ["occurrences skipped", t.skipped],
          ["lease expirations", t.lease_expired], ["messages resent", t.pending_resent],
          ["long retries released", t.retries_released], ["stale reports fenced", t.stale_reports_fenced]]
          .map(([label, value]) => h("div", {}, h("dt", {}, label), h("dd", {}, String(value)))))),
  ];
}

export async function overview(main) {
  const body = h("div");
  main.replaceChildren(h("h1", {}, "Overview"), body);
  const refresh = async () => body.replaceChildren(...draw(await get("/v1/stats")));
  await refresh();
  return { refresh, every: 5000 };
}
