// One execution: what happened on each attempt, and retry or cancel where its state allows.
import { get, post } from "../api.js";
import { RERUN, act, badge, confirmAction, externalLink, fill, h, ms, table, toast, when } from "../dom.js";
import { jobLink, jobNames } from "../names.js";

const RETRYABLE = ["dead", "failed", "cancelled"];
const CANCELLABLE = ["pending", "queued", "running", "retry_wait"];
const TERMINAL = ["succeeded", "failed", "dead", "skipped", "cancelled"];

function button(label, confirm, work, danger = false) {
  const el = h("button", { class: danger ? "danger" : "primary", onclick: () => act(el, async () => {
    const ok = await confirmAction({ ...confirm, action: label, danger });
    if (ok) await work(ok.chosen);
  }) }, label);
  return el;
}

// Each attempt's outcome; a container target's attempts link the log stream of their task.
function attempts(list) {
  const logged = list.some((a) => a.logs);
  return h("section", { "aria-label": "Attempts" }, h("h2", {}, "Attempts"),
    table(["#", "outcome", "started", "finished", "duration", "status", "error", ...(logged ? ["logs"] : [])],
      list.map((a) => h("tr", {},
        h("td", {}, String(a.attempt)), h("td", {}, badge(a.outcome)), h("td", {}, when(a.started_at)),
        h("td", {}, when(a.finished_at)), h("td", {}, ms(a.duration_ms)),
        h("td", {}, a.status_code ?? "–"), h("td", { class: "error-text" }, a.error || ""),
        logged ? h("td", {}, a.logs ? externalLink(a.logs, "logs") : "") : null)),
      "No attempt has finished yet."));
}

export async function execution(main, id) {
  const view = h("div");
  main.replaceChildren(view);
  let state = null;

  async function redraw() {
    const e = await get(`/v1/executions/${id}`);
    const names = await jobNames([e.job_id]);
    state = e.state;
    const actions = h("div", { class: "actions", role: "group", "aria-label": "Execution actions" },
      RETRYABLE.includes(e.state) && button("Retry",
        { title: "Run this execution again?", message: `${RERUN.now} It has used ${e.attempt}.`, choice: RERUN.asWas },
        async (asWas) => {
          await post(`/v1/executions/${id}/retry`, asWas ? { as_was: true } : undefined);
          toast("Re-run requested");
          await redraw();
        }),
      CANCELLABLE.includes(e.state) && button("Cancel",
        { title: "Cancel this execution?", message: "It will not start again; a running attempt is asked to stop." },
        async () => { await post(`/v1/executions/${id}/cancel`); toast("Cancel requested"); await redraw(); }, true));
    const facts = [
      ["job", jobLink(e.job_id, names)],
      ["scheduled", when(e.scheduled_time)],
      ["trigger", e.trigger],
      ["attempt", e.attempt_label],
      ["lane", e.lane],
      ["started", when(e.started_at)],
      ["finished", when(e.finished_at)],
      ["start lag", ms(e.lag_ms)],
      ["status code", e.status_code ?? "–"],
      // Kept by the API after the retry ran: only a waiting execution's is still to come.
      ["retry at", e.state === "retry_wait" && e.retry_at ? when(e.retry_at) : null],
      ["reason", e.reason],
      ["stale reports fenced", e.fenced_reports || null],
    ].filter(([, v]) => v !== null && v !== undefined && v !== "");
    fill(view,
      h("div", { class: "title" },
        h("div", {}, h("p", { class: "crumbs" }, h("a", { href: "#/jobs" }, "Jobs"), " / ", jobLink(e.job_id, names), " / execution"),
          h("h1", {}, h("span", { class: "mono" }, e.id), " ", badge(e.state))),
        actions),
      e.error && e.state !== "succeeded"
        ? h("div", { class: "error", role: "alert" }, h("strong", {}, "Last error: "), e.error) : null,
      h("section", { class: "panel" }, h("dl", { class: "pairs" }, facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))),
      attempts(e.attempts));
  }

  await redraw();
  // A finished execution changes only when someone acts on it, which redraws it anyway.
  return { refresh: () => (TERMINAL.includes(state) ? Promise.resolve() : redraw()), every: 2000 };
}
