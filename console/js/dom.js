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

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric",
  hour: "2-digit", minute: "2-digit", second: "2-digit",
});

// An instant in the browser's time zone, with the exact UTC value as its tooltip.
export function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "–");
  return h("time", { datetime: iso, title: iso }, dateTime.format(new Date(iso)), " ",
    h("span", { class: "muted" }, `(${relative(iso)})`));
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

export function ms(value) {
  if (value === null || value === undefined) return "–";
  return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`;
}

export function scheduleText(job) {
  if (job.schedule) return job.schedule;
  if (job.interval) return `every ${job.interval}`;
  return `once at ${job.run_at}`;
}

// Ask before acting; resolves true only when the user confirms.
export function confirmAction({ title, message, action, danger = false }) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-message").textContent = message;
  const ok = document.getElementById("confirm-ok");
  ok.textContent = action;
  ok.className = danger ? "danger" : "primary";
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
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

export function table(columns, rows, empty) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h("table", {},
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows));
}
