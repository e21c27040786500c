// Jobs: counts per state as filters, a name search, the list, and the form for a new job.
import { get, post, query } from "../api.js";
import { act, badge, h, scheduleText, table, toast, when } from "../dom.js";

const PAGE = 50;
const STATES = ["active", "paused", "completed"];

function row(job) {
  return h("tr", {},
    h("td", {}, h("a", { href: `#/jobs/${job.id}` }, job.name || job.id)),
    h("td", {}, badge(job.status)),
    h("td", {}, h("code", {}, scheduleText(job)), job.schedule ? h("span", { class: "muted" }, ` ${job.time_zone}`) : null),
    h("td", {}, when(job.next_run_time)),
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

  async function refresh() {
    const [items] = await Promise.all([load(Math.min(200, shown)), counts()]);
    list.replaceChildren(table(["name", "status", "schedule", "next run", "last outcome", "last run"],
      items.map(row), filter.name || filter.status ? "No job matches." : "No jobs yet: create one."));
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

  main.replaceChildren(
    h("div", { class: "title" }, h("h1", {}, "Jobs"),
      h("button", { class: "primary", onclick: () => newJob() }, "New job")),
    h("div", { class: "toolbar" }, chips, search),
    list, more);
  await refresh();
  return { refresh, every: 5000 };
}

function field(label, input, hint) {
  return h("label", { class: "field" }, h("span", {}, label), input, hint && h("small", { class: "muted" }, hint));
}

// The new-job form, in a dialog; a refused job shows the API's reason per field.
function newJob() {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const errors = h("div", { class: "error", role: "alert", hidden: true });
  const kind = h("select", { name: "kind" },
    h("option", { value: "schedule" }, "cron"), h("option", { value: "interval" }, "every"),
    h("option", { value: "run_at" }, "once at"));
  const form = h("form", { method: "dialog", class: "form" },
    h("h2", {}, "New job"),
    field("Name", h("input", { name: "job_name", maxlength: 200 })),
    h("div", { class: "row" },
      field("Schedule", kind),
      field("When", h("input", { name: "when", required: true, placeholder: "*/5 * * * *" }),
        "cron: 5 fields (or 6 with seconds); every: 90s, 15m, 1h; once at: 2030-01-01T09:00:00Z")),
    field("Time zone", h("input", { name: "time_zone", value: zone }), "IANA zone the cron runs in"),
    field("Target URL", h("input", { name: "target", type: "url", required: true, placeholder: "https://svc.example/hook" })),
    field("Payload (JSON)", h("textarea", { name: "payload", rows: 3, placeholder: '{"report": "daily"}' })),
    h("div", { class: "row" },
      field("Priority", h("select", { name: "priority" },
        ["default", "high", "low"].map((p) => h("option", { value: p }, p)))),
      field("Attempts", h("input", { name: "max_attempts", type: "number", min: 1, max: 100, value: 5 }))),
    errors,
    h("div", { class: "actions" },
      h("button", { value: "cancel", formnovalidate: true }, "Cancel"),
      h("button", { class: "primary", value: "create" }, "Create job")));
  const dialog = h("dialog", { "aria-label": "New job" }, form);
  kind.addEventListener("change", () => {
    form.elements.when.placeholder = { schedule: "*/5 * * * *", interval: "15m", run_at: "2030-01-01T09:00:00Z" }[kind.value];
  });
  form.addEventListener("submit", async (event) => {
    if (event.submitter?.value !== "create") return;
    event.preventDefault();
    const f = form.elements;
    const body = {
      name: f.job_name.value.trim() || undefined,
      [kind.value]: f.when.value.trim(),
      time_zone: f.time_zone.value.trim() || "UTC",
      target: f.target.value.trim(),
      priority: f.priority.value,
      retry: { max_attempts: Number(f.max_attempts.value) },
    };
    try {
      if (f.payload.value.trim()) body.payload = JSON.parse(f.payload.value);
      const created = await post("/v1/jobs", body);
      dialog.close();
      toast(`Created ${created.name || created.id}`);
      location.hash = `#/jobs/${created.id}`;
    } catch (error) {
      errors.hidden = false;
      errors.replaceChildren(
        error.errors?.length ? h("ul", {}, error.errors.map((e) => h("li", {}, `${e.field}: ${e.message}`))) : error.message);
    }
  });
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}
