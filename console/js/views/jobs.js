// Jobs: counts per state as filters, a name search, the list, and the form for a new job.
import { get, query } from "../api.js";
import { act, badge, h, scheduleText, table, toast, when } from "../dom.js";
import { newJob } from "../jobform.js";

const PAGE = 50;
const STATES = ["active", "paused", "completed"];

// A paused job keeps the next run it would have, but does not run then: the list says so rather
// than count down to a run that will not come (a job paused until a time stays active, and its
// next run is already the first after that time).
function nextRun(job) {
  return job.status === "paused" ? h("span", { class: "muted" }, "none while paused") : when(job.next_run_time);
}

function row(job) {
  return h("tr", {},
    h("td", {}, h("a", { href: `#/jobs/${job.id}` }, job.name || job.id)),
    h("td", {}, badge(job.status)),
    h("td", {}, h("code", {}, scheduleText(job)), job.schedule ? h("span", { class: "muted" }, ` ${job.time_zone}`) : null),
    h("td", {}, nextRun(job)),
    h("td", {}, job.last_outcome ? badge(job.last_outcome) : h("span", { class: "muted" }, "–")),
    h("td", {}, when(job.last_run_at)));
}

export async function jobs(main) {
  const filter = { status: "", name: "" };
  let shown = PAGE;
  let cursor = null;
  const chips = h("div", { class: "chips", role: "group", "aria-label": "Filter by state" });
  const search = h("input", { type: "search", placeholder: "Name starts with…", "aria-label": "Search by name" });
  const list = h("div");
  const deleted = h("section", { "aria-label": "Deleted jobs" });
  const more = h("button", { hidden: true, onclick: () => act(more, loadMore) }, "Load more");

  async function counts() {
    const { jobs: c } = await get("/v1/stats");
    const chip = (status, label, count) => h("button", {
      class: "chip", "aria-pressed": String(filter.status === status),
      onclick: () => { filter.status = status; show(); },
    }, `${label} `, h("span", { class: "count" }, String(count)));
    chips.replaceChildren(chip("", "All", c.total), ...STATES.map((s) => chip(s, s, c[s])));
  }

  async function load(limit) {
    const page = await get("/v1/jobs" + query({ limit, status: filter.status, name: filter.name }));
    cursor = page.next_cursor;
    more.hidden = !cursor;
    return page.items;
  }

  // A searched name's deleted holders, while their history is kept: a deleted job is found by
  // the name it had, under the jobs that have it now.
  async function formerHolders() {
    if (!filter.name) return [];
    const page = await get("/v1/deleted-jobs" + query({ name: filter.name }));
    return page.items;
  }

  async function refresh() {
    const [items, former] = await Promise.all([load(Math.min(200, shown)), formerHolders(), counts()]);
    list.replaceChildren(table(["name", "status", "schedule", "next run", "last outcome", "last run"],
      items.map(row), filter.name || filter.status ? "No job matches." : "No jobs yet: create one."));
    deleted.hidden = !former.length;
    deleted.replaceChildren(...(former.length ? [
      h("h2", {}, `Deleted jobs named \u201c${filter.name}\u201d`),
      table(["name", "deleted", "history kept until"], former.map((job) => h("tr", {},
        h("td", {}, h("a", { href: `#/jobs/${job.id}`, title: job.id }, job.name, h("span", { class: "muted" }, " (deleted)"))),
        h("td", {}, when(job.deleted_at)), h("td", {}, when(job.history_until)))), ""),
    ] : []));
  }

  // A filter change redraws at once; a failure shows as a toast, as for any action.
  function show() {
    refresh().catch((error) => toast(error.message, "error"));
  }

  async function loadMore() {
    const page = await get("/v1/jobs" + query({ limit: PAGE, cursor, status: filter.status, name: filter.name }));
    cursor = page.next_cursor;
    more.hidden = !cursor;
    shown += page.items.length;
    list.querySelector("tbody")?.append(...page.items.map(row));
  }

  let typing;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { filter.name = search.value.trim(); show(); }, 250);
  });

  // The form waits for the API's contract (its choices); a failure to read it is a toast.
  const create = h("button", { class: "primary", onclick: () => act(create, newJob) }, "New job");
  main.replaceChildren(
    h("div", { class: "title" }, h("h1", {}, "Jobs"),
      create),
    h("div", { class: "toolbar" }, chips, search),
    list, more, deleted);
  await refresh();
  return { refresh, every: 5000 };
}
