// A job's fields as the API's contract states them: the choices and defaults of each field of a
// create, read from the OpenAPI document the API serves (/v1/openapi.json, generated from its
// models). The job form offers these, so it offers every choice the API takes (a new overlap
// policy appears in the form with no edit here) and none it refuses. Pure: no fetch, no DOM, so
// tests run it under node against docs/openapi.json.

// A property's schema with its `$ref` followed and its null option left out.
function followed(schemas, schema) {
  const options = (schema.anyOf || []).filter((o) => o.type !== "null");
  const picked = options.length ? { ...schema, ...options[0] } : schema;
  const ref = picked.$ref;
  return ref ? { ...schemas[ref.split("/").pop()], ...picked } : picked;
}

// { field: [choices] } for each enum field of a create and of each object it nests, keyed as the
// API names them in errors ("overlap", "retry.backoff", "dst.gap").
export function choicesOf(document) {
  const schemas = document.components.schemas;
  const found = {};
  const add = (key, schema) => {
    const values = followed(schemas, schema.items || schema).enum;
    if (values) found[key] = values;
  };
  for (const [name, raw] of Object.entries(schemas.JobCreate.properties)) {
    const schema = followed(schemas, raw);
    if (schema.type === "object" && schema.properties) {
      for (const [inner, sub] of Object.entries(schema.properties)) add(`${name}.${inner}`, followed(schemas, sub));
    } else {
      add(name, schema);
    }
  }
  return found;
}

// The value each field of a create takes when left out (null when it has none).
export function defaultsOf(document) {
  const properties = document.components.schemas.JobCreate.properties;
  return Object.fromEntries(Object.entries(properties).map(([name, raw]) => [name, raw.default ?? null]));
}

// Each field of a create and how a form edits it: "choice" (its enum), "number", "flag", "text",
// or "json" (an object or a list, written as JSON).
export function fieldsOf(document) {
  const schemas = document.components.schemas;
  return Object.entries(schemas.JobCreate.properties).map(([name, raw]) => {
    const schema = followed(schemas, raw);
    const kinds = { integer: "number", number: "number", boolean: "flag", string: "text" };
    const kind = schema.enum ? "choice" : kinds[schema.type] || "json";
    return { name, kind, choices: schema.enum || null, description: raw.description || schema.description || "" };
  });
}
