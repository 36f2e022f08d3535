// Talking to the server: every request carries the key the user gave, if any.
// On a 401 the login dialog asks for a key (kept in sessionStorage), then the request is sent again.
import { askForKey } from "./login.js";

const KEY = "fncore.key";

export function key() {
  return sessionStorage.getItem(KEY);
}

export function setKey(value) {
  if (value) sessionStorage.setItem(KEY, value);
  else sessionStorage.removeItem(KEY);
  document.dispatchEvent(new CustomEvent("fncore:key"));
}

export function authHeaders(headers = {}) {
  const value = key();
  return value ? { ...headers, Authorization: `Bearer ${value}` } : { ...headers };
}

// fetch() with the key; asks for one (and retries) while the server answers 401.
export async function request(path, options = {}) {
  let refused = false;
  for (;;) {
    const response = await fetch(path, { ...options, headers: authHeaders(options.headers) });
    if (response.status !== 401) return response;
    setKey(null);
    await askForKey(refused ? "That key was refused." : "");
    refused = true;
  }
}

// The JSON body of a GET (or other) request; throws with the server's message on an error.
export async function json(path, options = {}) {
  const response = await request(path, options);
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body && body.error ? body.error.message : response.statusText;
    throw new Error(`${response.status}: ${message}`);
  }
  return body;
}
