// Small DOM and formatting helpers shared by the views.

// h("a", {href: "#/", class: "x", onclick: fn}, "text", child, [more]) builds an element.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else el.setAttribute(name, value === true ? "" : value);
  }
  el.append(...present(children));
  return el;
}

// Replace an element's children; like h(), it skips null, undefined and false (absent parts).
export function fill(el, ...children) {
  el.replaceChildren(...present(children));
}

function present(children) {
  return children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false);
}

export function badge(state) {
  return h("span", { class: `badge s-${state}` }, state.replace("_", " "));
}

// Every instant is shown one way: "2026-12-01 14:05:09 UTC", in UTC or in the browser's zone
// (then labelled with its offset, "UTC+01:00"), as the user chose with the toggle in the top bar.
const ZONE_KEY = "takt.zone";

export function zoneMode() {
  return localStorage.getItem(ZONE_KEY) === "local" ? "local" : "utc";
}

export function setZoneMode(mode) {
  localStorage.setItem(ZONE_KEY, mode === "local" ? "local" : "utc");
}

const pad = (n, size = 2) => String(n).padStart(size, "0");

function zoneLabel(date, mode) {
  if (mode === "utc") return "UTC";
  const east = -date.getTimezoneOffset();
  const size = Math.abs(east);
  return `UTC${east < 0 ? "-" : "+"}${pad(Math.floor(size / 60))}:${pad(size % 60)}`;
}

// The parts of `date` in the chosen zone: [year, month, day, hours, minutes, seconds].
function fields(date, mode) {
  return mode === "utc"
    ? [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()]
    : [date.getFullYear(), date.getMonth() + 1, date.getDate(), date.getHours(), date.getMinutes(), date.getSeconds()];
}

export function formatTime(value, mode = zoneMode()) {
  const date = new Date(value);
  const [y, mo, d, hh, mm, ss] = fields(date, mode);
  return `${pad(y, 4)}-${pad(mo)}-${pad(d)} ${pad(hh)}:${pad(mm)}:${pad(ss)} ${zoneLabel(date, mode)}`;
}

// Hours and minutes only ("14:05"), for chart axes whose caption names the zone.
export function clockTime(value, mode = zoneMode()) {
  const [, , , hh, mm] = fields(new Date(value), mode);
  return `${pad(hh)}:${pad(mm)}`;
}

export function zoneName(mode = zoneMode()) {
  return zoneLabel(new Date(), mode);
}

// An instant with how long ago (or until) it is; its tooltip is the same instant in the other
// zone, so both are one hover away.
export function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "–");
  const other = formatTime(iso, zoneMode() === "utc" ? "local" : "utc");
  return h("time", { datetime: iso, title: other }, h("span", { class: "stamp" }, formatTime(iso)), " ",
    h("span", { class: "muted ago" }, `(${relative(iso)})`));
}

export function relative(iso, now = Date.now()) {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const size = Math.abs(seconds);
  if (size < 1) return "now";
  const [count, unit] =
    size < 60 ? [size, "s"] :
    size < 3600 ? [Math.round(size / 60), "min"] :
    size < 86400 ? [Math.round(size / 3600), "h"] : [Math.round(size / 86400), "d"];
  return seconds >= 0 ? `in ${count} ${unit}` : `${count} ${unit} ago`;
}

// A duration in the largest unit that keeps it short (a backfilled run starts weeks late):
// 850 ms, 2.5 s, 12.0 min, 3.2 h, 30.9 d.
const UNITS = [[86_400_000, "d"], [3_600_000, "h"], [60_000, "min"], [1000, "s"]];

export function ms(value) {
  if (value === null || value === undefined) return "–";
  const [size, unit] = UNITS.find(([size]) => value >= size) || [1, "ms"];
  return unit === "ms" ? `${Math.round(value)} ms` : `${(value / size).toFixed(1)} ${unit}`;
}

// A link out of the console (a container's logs): only an http(s) address becomes one, opened in
// a new tab that gets no handle back to this page; anything else is shown as text, never followed.
export function externalLink(address, text) {
  let url = null;
  try {
    url = new URL(address);
  } catch {
    url = null;
  }
  if (!url || !["http:", "https:"].includes(url.protocol)) return h("span", { class: "mono" }, address);
  return h("a", { href: url.href, target: "_blank", rel: "noopener noreferrer" }, text);
}

export function scheduleText(job) {
  if (job.schedule) return job.schedule;
  if (job.interval) return `every ${job.interval}`;
  return `once at ${formatTime(job.run_at)}`;
}

// The API's words for a schedule may hold an instant ("every 1 hour from 2026-12-01T14:05:09Z"):
// written the console's one way, like every other time on the page.
export function timesIn(text) {
  return text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)/g, (iso) => formatTime(iso));
}

// What re-running an execution means (the API's default), and its variant, worded once for every
// page that re-runs.
export const RERUN = {
  now: "It runs again with its job as it is now (target, payload, timeout, retry policy, priority), so a fix to the job applies, with a fresh budget of attempts.",
  asWas: "As it ran: re-send its own snapshot (the target and payload it was made with)",
};

// Ask before acting; resolves false unless the user confirms, then {chosen}: whether the box
// `choice` labels (a variant of the action, shown when given) was ticked.
export function confirmAction({ title, message, action, danger = false, choice = null }) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-message").textContent = message;
  const option = document.getElementById("confirm-choice");
  const box = option.querySelector("input");
  option.hidden = !choice;
  option.querySelector("span").textContent = choice || "";
  box.checked = false;
  const ok = document.getElementById("confirm-ok");
  ok.textContent = action;
  ok.className = danger ? "danger" : "primary";
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok" && { chosen: box.checked }), { once: true });
  });
}

export function toast(message, kind = "info") {
  const note = h("div", { class: `toast ${kind}` }, message);
  document.getElementById("toasts").append(note);
  setTimeout(() => note.remove(), kind === "error" ? 8000 : 4000);
}

// Run an action from a button: disabled while it runs, an error becomes a toast.
export async function act(button, work) {
  button.disabled = true;
  try {
    await work();
  } catch (error) {
    toast(error.message, "error");
  } finally {
    button.disabled = false;
  }
}

// Each cell names its column, which a narrow screen shows beside the value (a row becomes a card).
export function labelCells(columns, rows) {
  for (const row of rows) {
    [...row.children].forEach((cell, i) => columns[i] && cell.setAttribute("data-label", columns[i]));
  }
  return rows;
}

export function table(columns, rows, empty) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  labelCells(columns, rows);
  return h("table", {},
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows));
}
