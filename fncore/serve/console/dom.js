// Small helpers the views share: building elements, and polling while a view is shown.

// A new `tag` element with these attributes ("class" sets its class) and children (text or nodes).
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

// The function a view's mount returns to call `refresh` now and every `ms` while it is shown.
export function pollWhileShown(refresh, ms) {
  let timer = null;
  return (visible) => {
    clearInterval(timer);
    timer = null;
    if (visible) {
      refresh();
      timer = setInterval(refresh, ms);
    }
  };
}
