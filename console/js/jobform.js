// The job form, one for "New job" and for editing a job: every field the API takes, each showing
// the API's own problem+json message for it beside it. The API is the one validator (the form
// has no browser validation of its own), and the choices and defaults the form offers are the
// API's own (its OpenAPI document, read by contract.js), so the console and the API can never
// disagree.
import { get, patch, post } from "./api.js";
import { choicesOf, defaultsOf, fieldsOf } from "./contract.js";
import { h, toast } from "./dom.js";

const KINDS = {
  schedule: ["cron", "*/5 * * * *"],
  interval: ["every", "15m"],
  run_at: ["once at", "2030-01-01T09:00:00Z"],
};
const RETRY = ["max_attempts", "backoff", "initial_interval", "max_interval", "jitter"];
// The fields this form lays out itself. Any other field of the API's contract gets a control of
// its kind under "More", so a field added to the API's models appears here with no edit. Not in
// the form: `status` (the job page's Pause and Resume), `run_late` (the API's refusal of a late
// run_at names it) and `idempotency_key` (for scripts that retry a create).
const LAID_OUT = new Set(["name", "schedule", "interval", "run_at", "time_zone", "dst", "start_at",
  "end_at", "target", "tasks", "payload", "priority", "timeout_sec", "retry", "catchup",
  "catchup_window", "overlap", "jitter", "pause_until", "calendars", "status", "run_late",
  "idempotency_key"]);

// The API's contract, read once per page load: the choices and defaults of a job's fields, and
// the fields laid out under "More".
let loaded = null;
async function loadContract() {
  if (!loaded) {
    const document = await get("/v1/openapi.json");
    const more = fieldsOf(document).filter((f) => !LAID_OUT.has(f.name));
    loaded = { choices: choicesOf(document), defaults: defaultsOf(document), more };
  }
  return loaded;
}

// The fields of a job this form shows under "More", for the job's page to show them too.
export async function moreFields() {
  return (await loadContract()).more;
}

const json = (value) => (value === null || value === undefined ? "" : JSON.stringify(value, null, 2));
const options = (values, chosen) => values.map(([value, label]) =>
  h("option", { value, selected: value === chosen }, label ?? value));
const choose = (values, chosen) => options(values.map((v) => [v]), chosen);

// The control that shows an error the API reports for `field` ("retry.max_attempts", "interval").
function controlFor(field) {
  const [top, sub] = field.replace(/\[\d+\]/g, "").split(".");
  if (top in KINDS) return "when";
  if (top === "name") return "job_name";
  if (top === "retry") return `retry_${RETRY.includes(sub) ? sub : "max_attempts"}`;
  if (top === "dst") return `dst_${sub === "overlap" ? "overlap" : "gap"}`;
  return top;
}

function field(label, control, hint) {
  const id = `job-${control.name}`;
  control.id = id;
  control.setAttribute("aria-describedby", `${id}-error${hint ? ` ${id}-hint` : ""}`);
  return h("div", { class: "field" },
    h("label", { for: id }, label), control,
    hint && h("small", { class: "muted", id: `${id}-hint` }, hint),
    h("small", { class: "field-error", id: `${id}-error`, hidden: true }));
}

// The control of a field the form does not lay out itself, by its kind.
function control({ name, kind, choices }, value) {
  if (kind === "choice") return h("select", { name }, options([["", "none"], ...choices.map((c) => [c])], value ?? ""));
  if (kind === "flag") return h("input", { name, type: "checkbox", checked: Boolean(value) });
  if (kind === "json") return h("textarea", { name, rows: 2 }, json(value));
  return h("input", { name, type: kind === "number" ? "number" : "text", value: value ?? "" });
}

const titled = (name) => name[0].toUpperCase() + name.slice(1).replaceAll("_", " ");

function build(job, { choices, more }, title, submit) {
  const kind = ["schedule", "interval", "run_at"].find((k) => job[k]) || "schedule";
  const runs = job.tasks ? "tasks" : "target";
  const when = h("input", { name: "when", value: job[kind] || "", placeholder: KINDS[kind][1] });
  const kindSelect = h("select", { name: "kind" },
    options(Object.entries(KINDS).map(([k, [label]]) => [k, label]), kind));
  kindSelect.addEventListener("change", () => { when.placeholder = KINDS[kindSelect.value][1]; });
  const target = field("Target", h("textarea", { name: "target", rows: 2, placeholder: "https://svc.example/hook" }, job.target || ""),
    'an http(s) URL (POSTed to), handler:NAME, sqs:…, sns:…, events:…, or a JSON object such as {"type": "http", "url": …, "method": "PUT", "headers": {…}}');
  const tasks = field("Tasks (JSON)", h("textarea", { name: "tasks", rows: 6, placeholder: '[{"id": "extract", "target": "https://…"}]' }, json(job.tasks)),
    "a workflow: tasks with depends_on (docs/WORKFLOWS.md)");
  const runsSelect = h("select", { name: "runs" }, options([["target", "one target"], ["tasks", "a workflow"]], runs));
  const shown = () => { target.hidden = runsSelect.value !== "target"; tasks.hidden = runsSelect.value !== "tasks"; };
  runsSelect.addEventListener("change", shown);
  shown();
  const retry = job.retry;
  const problems = h("div", { class: "error", role: "alert", hidden: true });
  const form = h("form", { method: "dialog", class: "form", novalidate: true },
    h("h2", {}, title),
    field("Name", h("input", { name: "job_name", value: job.name || "", maxlength: 200 })),
    h("fieldset", {}, h("legend", {}, "Timing"),
      h("div", { class: "row" }, field("Schedule", kindSelect),
        field("When", when, "cron: 5 fields (or 6 with seconds); every: 90s, 15m, 1h; once at: 2030-01-01T09:00:00Z")),
      h("div", { class: "row" },
        field("Time zone", h("input", { name: "time_zone", value: job.time_zone }), "IANA zone the cron runs in"),
        field("Start at", h("input", { name: "start_at", value: job.start_at || "", placeholder: "none" })),
        field("End at", h("input", { name: "end_at", value: job.end_at || "", placeholder: "none" }))),
      h("div", { class: "row" },
        field("Skipped hour (DST)", h("select", { name: "dst_gap" }, choose(choices["dst.gap"], job.dst.gap))),
        field("Repeated hour (DST)", h("select", { name: "dst_overlap" }, choose(choices["dst.overlap"], job.dst.overlap))),
        field("Catch-up", h("select", { name: "catchup" }, choose(choices.catchup, job.catchup))),
        field("Catch-up window", h("input", { name: "catchup_window", value: job.catchup_window }))),
      h("div", { class: "row" },
        field("Spread starts (jitter)", h("input", { name: "jitter", value: job.jitter || "", placeholder: "none, e.g. 15m" })),
        field("Paused until", h("input", { name: "pause_until", value: job.pause_until || "", placeholder: "none" })),
        field("Calendars", h("input", { name: "calendars", value: (job.calendars || []).join(", "), placeholder: "none" }),
          "blackout calendars, comma-separated"))),
    h("fieldset", {}, h("legend", {}, "Work"),
      field("Runs", runsSelect), target, tasks,
      field("Payload (JSON)", h("textarea", { name: "payload", rows: 3, placeholder: '{"report": "daily"}' }, json(job.payload)))),
    h("fieldset", {}, h("legend", {}, "Limits and retries"),
      h("div", { class: "row" },
        field("Priority", h("select", { name: "priority" }, choose(choices.priority, job.priority))),
        field("Timeout (s)", h("input", { name: "timeout_sec", type: "number", value: job.timeout_sec })),
        field("Overlap", h("select", { name: "overlap" }, choose(choices.overlap, job.overlap)))),
      h("div", { class: "row" },
        field("Attempts", h("input", { name: "retry_max_attempts", type: "number", value: retry.max_attempts })),
        field("Backoff", h("select", { name: "retry_backoff" }, choose(choices["retry.backoff"], retry.backoff))),
        field("Retry jitter", h("select", { name: "retry_jitter" }, choose(choices["retry.jitter"], retry.jitter)))),
      h("div", { class: "row" },
        field("First retry after", h("input", { name: "retry_initial_interval", value: retry.initial_interval })),
        field("Longest wait", h("input", { name: "retry_max_interval", value: retry.max_interval })))),
    more.length ? h("fieldset", {}, h("legend", {}, "More"),
      ...more.map((f) => field(f.kind === "json" ? `${titled(f.name)} (JSON)` : titled(f.name), control(f, job[f.name]), f.description))) : null,
    problems,
    h("div", { class: "actions" },
      h("button", { value: "cancel" }, "Cancel"),
      h("button", { class: "primary", value: "save" }, submit)));
  return { form, problems };
}

// The form's values in the API's shape (every field, as a create body has them).
function read(form, more) {
  const f = form.elements;
  const text = (name) => f[name].value.trim();
  const parsed = (name) => {
    if (!text(name)) return null;
    try {
      return JSON.parse(text(name));
    } catch (error) {
      throw Object.assign(new Error(`${name}: not valid JSON`), { errors: [{ field: name, message: `not valid JSON (${error.message})` }] });
    }
  };
  // An empty number stays "", which the API refuses by name (null would mean "no value").
  const number = (name) => (text(name) === "" ? "" : Number(text(name)));
  const workflow = f.runs.value === "tasks";
  const kinds = { choice: (n) => f[n].value || null, flag: (n) => f[n].checked, json: parsed, number, text: (n) => text(n) || null };
  return {
    ...Object.fromEntries(more.map(({ name, kind }) => [name, kinds[kind](name)])),
    name: text("job_name") || null,
    schedule: null, interval: null, run_at: null, [f.kind.value]: text("when"),
    time_zone: text("time_zone"),
    dst: { gap: f.dst_gap.value, overlap: f.dst_overlap.value },
    start_at: text("start_at") || null,
    end_at: text("end_at") || null,
    target: workflow ? null : text("target"),
    tasks: workflow ? parsed("tasks") : null,
    payload: parsed("payload"),
    priority: f.priority.value,
    timeout_sec: number("timeout_sec"),
    retry: {
      max_attempts: number("retry_max_attempts"), backoff: f.retry_backoff.value,
      initial_interval: text("retry_initial_interval"), max_interval: text("retry_max_interval"),
      jitter: f.retry_jitter.value,
    },
    catchup: f.catchup.value,
    catchup_window: text("catchup_window"),
    overlap: f.overlap.value,
    jitter: text("jitter") || null,
    pause_until: text("pause_until") || null,
    calendars: text("calendars") ? text("calendars").split(",").map((c) => c.trim()).filter(Boolean) : null,
  };
}

const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

// A create body: what the form holds, leaving out what is empty (the API's defaults apply).
function createBody(values) {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null && v !== ""));
}

// A PATCH body: only the fields the user changed; a cleared optional field is sent as null. A
// schedule is sent whole (its kind and value together), as the API replaces it whole.
function patchBody(values, stored, more) {
  const job = { ...stored, calendars: stored.calendars?.length ? stored.calendars : null };
  const body = {};
  const kind = ["schedule", "interval", "run_at"].find((k) => values[k] !== null);
  if (!same(values[kind], job[kind])) body[kind] = values[kind];
  for (const key of ["name", "time_zone", "dst", "start_at", "end_at", "payload", "priority",
    "timeout_sec", "retry", "catchup", "catchup_window", "overlap", "jitter", "pause_until", "calendars",
    ...more.map((f) => f.name)]) {
    if (!same(values[key], job[key])) body[key] = values[key];
  }
  if (values.tasks !== null ? !same(values.tasks, job.tasks) : !same(values.target, job.target)) {
    if (values.tasks !== null) body.tasks = values.tasks;
    else body.target = values.target;
  }
  return body;
}

// Each error beside its field; the ones no field owns (a conflict, an outage) above the buttons.
function showErrors(form, problems, error) {
  for (const note of form.querySelectorAll(".field-error")) note.hidden = true;
  for (const control of form.querySelectorAll("[aria-invalid]")) control.removeAttribute("aria-invalid");
  const unplaced = [];
  for (const e of error.errors || []) {
    const control = form.elements[controlFor(e.field)];
    if (!control || control.closest("[hidden]")) {
      unplaced.push(`${e.field}: ${e.message}`);
      continue;
    }
    const note = document.getElementById(`${control.id}-error`);
    note.textContent = note.hidden ? e.message : `${note.textContent}; ${e.message}`;
    note.hidden = false;
    control.setAttribute("aria-invalid", "true");
  }
  if (!error.errors?.length) unplaced.push(error.message);
  problems.hidden = !unplaced.length;
  problems.replaceChildren(unplaced.length > 1 ? h("ul", {}, unplaced.map((u) => h("li", {}, u))) : unplaced[0] || "");
  form.querySelector("[aria-invalid]")?.focus();
}

async function openForm(label, title, submit, job, save) {
  const contract = await loadContract();
  const { form, problems } = build(job, contract, title, submit);
  const dialog = h("dialog", { "aria-label": label, class: "job-form" }, form);
  form.addEventListener("submit", async (event) => {
    if (event.submitter?.value !== "save") return;
    event.preventDefault();
    const button = event.submitter;
    button.disabled = true;
    try {
      if (await save(read(form, contract.more))) dialog.close();
    } catch (error) {
      showErrors(form, problems, error);
    } finally {
      button.disabled = false;
    }
  });
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}

// "New job": on success, the new job's page.
export async function newJob() {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const { defaults } = await loadContract();
  await openForm("New job", "New job", "Create job", { ...defaults, time_zone: zone }, async (values) => {
    const created = await post("/v1/jobs", createBody(values));
    toast(`Created ${created.name || created.id}`);
    location.hash = `#/jobs/${created.id}`;
    return true;
  });
}

// Edit `job`: sends only what changed, with If-Match, so a change someone made meanwhile is not
// overwritten (the API answers 412, shown in the form). `saved` redraws the page.
export async function editJob(job, saved) {
  const label = job.name || job.id;
  await openForm("Edit job", `Edit ${label}`, "Save changes", job, async (values) => {
    const body = patchBody(values, job, (await loadContract()).more);
    if (!Object.keys(body).length) {
      toast("Nothing changed");
      return true;
    }
    await patch(`/v1/jobs/${encodeURIComponent(job.id)}`, body, { "If-Match": `"${job.version}"` });
    toast(`Saved ${values.name || label}`);
    await saved();
    return true;
  });
}
