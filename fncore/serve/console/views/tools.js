// Tools: each tool the model sees (GET /api/tools): description, JSON schema and where it comes from.
export const title = "Tools";
export const order = 50;

export function mount(panel, api) {
  const heading = document.createElement("h2");
  heading.textContent = "Tools";
  const body = document.createElement("div");
  body.className = "tools";
  panel.append(heading, body);
  let loaded = false;
  async function load() {
    try {
      const { data } = await api.json("/api/tools");
      if (!data.length) {
        body.textContent = "This agent has no tools.";
      } else {
        body.replaceChildren(
          ...data.map((tool) => {
            const card = document.createElement("article");
            card.className = "tool";
            card.dataset.tool = tool.name;
            const name = document.createElement("h3");
            name.textContent = tool.name;
            const source = document.createElement("p");
            source.className = "muted";
            source.textContent = `Source: ${tool.source}`;
            const description = document.createElement("p");
            description.textContent = tool.description || "(no description)";
            const schema = document.createElement("details");
            schema.open = true;
            const summary = document.createElement("summary");
            summary.textContent = "Parameters (JSON schema)";
            const pre = document.createElement("pre");
            pre.textContent = JSON.stringify(tool.parameters, null, 2);
            schema.append(summary, pre);
            card.append(name, source, description, schema);
            return card;
          }),
        );
      }
      loaded = true;
    } catch (failure) {
      body.textContent = failure.message;
    }
  }
  return (visible) => {
    if (visible && !loaded) load();
  };
}
