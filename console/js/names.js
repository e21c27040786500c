// Job names for pages that hold only job ids (executions, dead letters, runs): people think in
// names. Each job is read once per page shown; a deleted job keeps its id, marked as deleted.
import { get } from "./api.js";
import { h } from "./dom.js";

let known = new Map();

// Called on every route change, so a renamed job shows its new name on the next page.
export function forgetNames() {
  known = new Map();
}

function lookUp(id) {
  if (!known.has(id)) {
    const found = get(`/v1/jobs/${encodeURIComponent(id)}`).then(
      (job) => ({ name: job.name, deleted: false }),
      (error) => {
        if (error.status === 404) return { name: null, deleted: true };
        known.delete(id); // not an answer about the job: ask again next time
        throw error;
      });
    known.set(id, found);
  }
  return known.get(id);
}

// A map from each of `ids` to {name, deleted}.
export async function jobNames(ids) {
  const unique = [...new Set(ids)];
  const found = await Promise.all(unique.map(lookUp));
  return new Map(unique.map((id, i) => [id, found[i]]));
}

// A link to a job by its name (its id when it has none), the id as the tooltip.
export function jobLink(id, names) {
  const job = names.get(id) || { name: null, deleted: false };
  return h("a", { href: `#/jobs/${encodeURIComponent(id)}`, title: id }, job.name || id,
    job.deleted ? h("span", { class: "muted" }, " (deleted)") : null);
}
