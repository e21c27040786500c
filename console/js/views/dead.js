// Dead letters: the executions that need a person (dead: every attempt failed; failed: the
// target ruled out a retry), with a bulk re-run.
import { get, post, query } from "../api.js";
import { RERUN, act, confirmAction, h, labelCells, table, toast, when } from "../dom.js";
import { jobLink, jobNames } from "../names.js";

const COLUMNS = ["", "execution", "job", "finished", "attempts", "last error"];

export async function deadLetters(main, state = "dead") {
  const list = h("div");
  const rerun = h("button", { class: "primary", disabled: true }, "Re-run selected");
  const more = h("button", { hidden: true }, "Load more");
  let cursor = null;

  const selected = () => [...list.querySelectorAll("tbody input:checked")].map((box) => box.value);
  const update = () => {
    const count = selected().length;
    rerun.disabled = count === 0;
    rerun.textContent = count ? `Re-run ${count} selected` : "Re-run selected";
  };

  const row = (e, names) => h("tr", {},
    h("td", {}, h("input", { type: "checkbox", value: e.id, "aria-label": `Select ${e.id}`, onchange: update })),
    h("td", {}, h("a", { href: `#/executions/${e.id}`, class: "mono", title: e.id }, e.id.split(".").pop())),
    h("td", {}, jobLink(e.job_id, names)),
    h("td", {}, when(e.finished_at)),
    h("td", {}, e.attempt_label),
    h("td", { class: "error-text" }, e.error || ""));

  async function load(first) {
    const page = await get("/v1/executions" + query({ state, limit: 50, cursor: first ? null : cursor }));
    const names = await jobNames(page.items.map((e) => e.job_id));
    const rows = labelCells(COLUMNS, page.items.map((e) => row(e, names)));
    cursor = page.next_cursor;
    more.hidden = !cursor;
    if (first) {
      const all = h("input", { type: "checkbox", "aria-label": "Select all", onchange: () => {
        for (const box of list.querySelectorAll("tbody input")) box.checked = all.checked;
        update();
      } });
      list.replaceChildren(page.items.length
        ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, all),
          ...COLUMNS.slice(1).map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, rows))
        : table([], [], state === "dead" ? "No dead executions." : "No failed executions."));
    } else {
      list.querySelector("tbody").append(...rows);
    }
    update();
  }

  rerun.addEventListener("click", () => act(rerun, async () => {
    const ids = selected();
    const ok = await confirmAction({
      title: `Re-run ${ids.length} execution${ids.length > 1 ? "s" : ""}?`,
      message: RERUN.now.replace("It runs", "Each runs").replace("its job", "the job"),
      action: "Re-run",
      choice: RERUN.asWas,
    });
    if (!ok) return;
    const body = ok.chosen ? { as_was: true } : undefined;
    const results = await Promise.allSettled(ids.map((id) => post(`/v1/executions/${id}/retry`, body)));
    const failed = results.filter((r) => r.status === "rejected");
    toast(`Re-ran ${ids.length - failed.length} of ${ids.length}` +
      (failed.length ? `: ${failed[0].reason.message}` : ""), failed.length ? "error" : "info");
    await load(true);
  }));
  more.addEventListener("click", () => act(more, () => load(false)));

  main.replaceChildren(
    h("div", { class: "title" }, h("h1", {}, "Dead letters"), rerun),
    h("nav", { class: "tabs", "aria-label": "State" },
      h("a", { href: "#/dead/dead", "aria-current": state === "dead" ? "page" : null }, "Dead"),
      h("a", { href: "#/dead/failed", "aria-current": state === "failed" ? "page" : null }, "Failed")),
    list, more);
  await load(true);
}
