// The shell: one tab per module in views/ (listed by /console/views.json), each view in its own panel.
// A view module exports `title`, `order` (its tab's place, lowest first) and `mount(panel, api)`;
// mount may return a function the shell calls with `true`/`false` as the view is shown or hidden.
import * as api from "./api.js";

const tabs = document.getElementById("tabs");
const panels = document.getElementById("views");
const shown = new Map();

function select(name) {
  for (const [id, view] of shown) {
    const active = id === name;
    view.tab.setAttribute("aria-selected", String(active));
    view.tab.tabIndex = active ? 0 : -1;
    view.panel.hidden = !active;
    if (view.visible) view.visible(active);
  }
  if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
}

function addTab(name, view) {
  const item = document.createElement("li");
  item.setAttribute("role", "presentation");
  const tab = document.createElement("button");
  tab.type = "button";
  tab.id = `tab-${name}`;
  tab.setAttribute("role", "tab");
  tab.setAttribute("aria-controls", `view-${name}`);
  tab.textContent = view.title;
  tab.addEventListener("click", () => select(name));
  tab.addEventListener("keydown", (event) => {
    const names = [...shown.keys()];
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = names[(names.indexOf(name) + step + names.length) % names.length];
    select(next);
    shown.get(next).tab.focus();
  });
  item.append(tab);
  tabs.append(item);
  const panel = document.createElement("section");
  panel.id = `view-${name}`;
  panel.className = "view";
  panel.setAttribute("role", "tabpanel");
  panel.setAttribute("aria-labelledby", tab.id);
  panel.hidden = true;
  panels.append(panel);
  return { tab, panel };
}

async function start() {
  document.getElementById("login").addEventListener("cancel", (event) => event.preventDefault());
  const signout = document.getElementById("signout");
  const showSignout = () => (signout.hidden = !api.key());
  document.addEventListener("fncore:key", showSignout);
  signout.addEventListener("click", () => api.setKey(null));
  showSignout();

  const { views } = await (await fetch("/console/views.json")).json();
  const modules = await Promise.all(views.map((name) => import(`./views/${name}.js`)));
  const ordered = views
    .map((name, i) => ({ name, module: modules[i] }))
    .sort((a, b) => (a.module.order ?? 100) - (b.module.order ?? 100) || a.name.localeCompare(b.name));
  for (const { name, module } of ordered) {
    const view = addTab(name, module);
    shown.set(name, view);
    view.visible = module.mount(view.panel, api) || null;
  }
  const wanted = location.hash.slice(1);
  select(shown.has(wanted) ? wanted : ordered[0].name);
  // A link to `#NAME` (e.g. the Chat view's link to the Approvals inbox) shows that view.
  window.addEventListener("hashchange", () => shown.has(location.hash.slice(1)) && select(location.hash.slice(1)));
  document.body.dataset.ready = "true";
}

start().catch((error) => {
  document.getElementById("status").textContent = `The console could not start: ${error.message}`;
});
