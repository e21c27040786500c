// The console's router: the hash names the page, and the page may ask to be refreshed.
import { loadConfig, setToken } from "./api.js";
import { formatTime, h, setZoneMode, zoneMode } from "./dom.js";
import { forgetNames } from "./names.js";
import { overview } from "./views/overview.js";
import { jobs } from "./views/jobs.js";
import { job } from "./views/job.js";
import { execution } from "./views/execution.js";
import { run } from "./views/run.js";
import { deadLetters } from "./views/dead.js";

const routes = [
  [/^#?\/?$/, "overview", overview],
  [/^#\/jobs$/, "jobs", jobs],
  [/^#\/jobs\/([^/]+)$/, "jobs", job],
  [/^#\/executions\/([^/]+)$/, "jobs", execution],
  [/^#\/runs\/([^/]+)$/, "jobs", run],
  [/^#\/dead(?:\/(dead|failed))?$/, "dead", deadLetters],
];

const main = document.getElementById("main");
let timer = null;
let page = 0;

// A view is `async (main, ...params) => ({refresh, every})`: it draws itself into `main`, and
// `refresh` (if any) is called every `every` ms while the page is shown and no dialog is open.
async function show() {
  clearInterval(timer);
  // A dialog belongs to the page that opened it: leaving the page (a link, the back button)
  // closes it rather than leaving it open over the next one.
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close("cancel");
  forgetNames();
  const current = ++page;
  const [pattern, nav, view] = routes.find(([p]) => p.test(location.hash)) || [/^/, "", notFound];
  const params = location.hash.match(pattern).slice(1).map((p) => p && decodeURIComponent(p));
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.toggleAttribute("aria-current", link.dataset.nav === nav);
  }
  main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  try {
    const { refresh, every } = (await view(main, ...params)) || {};
    stamp();
    if (refresh && current === page) {
      timer = setInterval(async () => {
        if (document.querySelector("dialog[open]") || document.hidden) return;
        try {
          await refresh();
          stamp();
        } catch (error) {
          document.getElementById("updated").textContent = `refresh failed: ${error.message}`;
        }
      }, every);
    }
  } catch (error) {
    main.replaceChildren(h("div", { class: "error", role: "alert" },
      h("h1", {}, error.status === 404 ? "Not found" : "Something went wrong"),
      h("p", {}, error.message)));
  }
}

async function notFound() {
  throw Object.assign(new Error(`There is no page at ${location.hash}.`), { status: 404 });
}

function stamp() {
  document.getElementById("updated").textContent = `updated ${formatTime(Date.now()).slice(11)}`;
}

// The UTC/local switch: remembered in localStorage, and the page redrawn in the chosen zone.
function zoneToggle() {
  const buttons = document.querySelectorAll("#zone button");
  const mark = () => buttons.forEach((b) => b.setAttribute("aria-pressed", String(b.value === zoneMode())));
  for (const button of buttons) {
    button.addEventListener("click", () => {
      setZoneMode(button.value);
      mark();
      show();
    });
  }
  mark();
}

async function start() {
  const config = await loadConfig();
  if (config.auth === "bearer") {
    const form = document.getElementById("token-form");
    form.hidden = false;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      setToken(form.elements.token.value.trim());
      form.reset();
      show();
    });
  }
  zoneToggle();
  window.addEventListener("hashchange", show);
  await show();
}

start();
