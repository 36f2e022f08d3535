// Stack: the onion at each position (GET /api/stack), outermost middleware first.
export const title = "Stack";
export const order = 40;

function onion(position, names) {
  const figure = document.createElement("figure");
  figure.className = "onion";
  const caption = document.createElement("figcaption");
  caption.textContent = position;
  let inner = document.createElement("div");
  inner.className = "core";
  inner.textContent = position === "tool_call" ? "the tool" : position === "model_call" ? "the model" : "the core";
  for (const name of [...names].reverse()) {
    const layer = document.createElement("div");
    layer.className = "layer";
    const label = document.createElement("span");
    label.className = "layer-name";
    label.textContent = name;
    layer.append(label, inner);
    inner = layer;
  }
  figure.append(caption, inner);
  figure.setAttribute("aria-label", `${position}: ${names.length ? names.join(", then ") : "no middleware"}`);
  return figure;
}

export function mount(panel, api) {
  const body = document.createElement("div");
  const heading = document.createElement("h2");
  heading.textContent = "Middleware stack";
  panel.append(heading, body);
  let loaded = false;
  async function load() {
    try {
      const stack = await api.json("/api/stack");
      const onions = document.createElement("div");
      onions.className = "onions";
      for (const [position, names] of Object.entries(stack.positions)) onions.append(onion(position, names));
      const text = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = "As fncore stack prints it";
      const pre = document.createElement("pre");
      pre.textContent = stack.text;
      text.append(summary, pre);
      body.replaceChildren(onions, text);
      loaded = true;
    } catch (failure) {
      body.textContent = failure.message;
    }
  }
  return (visible) => {
    if (visible && !loaded) load();
  };
}
