// The takt API as the console calls it. `config.json` beside index.html says where the API is
// ("" is this origin, as under `takt local`) and how to authenticate: "none", or "bearer" for a
// deployment with a JWT authorizer, where the user pastes a token that stays in this tab only.

const TOKEN_KEY = "takt.token";
let config = { api: "", auth: "none" };

export class ApiError extends Error {
  constructor(status, message, errors) {
    super(message);
    this.status = status;
    this.errors = errors || [];
  }
}

export async function loadConfig() {
  const res = await fetch("config.json", { cache: "no-cache" });
  if (res.ok) config = { ...config, ...(await res.json()) };
  return config;
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export async function call(method, path, body, extra = {}) {
  const headers = { Accept: "application/json", ...extra };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (config.auth === "bearer" && token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(config.api + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) {
    throw new ApiError(res.status, (data && (data.detail || data.title)) || res.statusText, data && data.errors);
  }
  return data;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body);
export const patch = (path, body, headers) => call("PATCH", path, body, headers);
export const del = (path) => call("DELETE", path);

export function query(params) {
  const pairs = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return pairs.length ? "?" + new URLSearchParams(pairs).toString() : "";
}
