// The login dialog: shown when the server asks for a key.
let waiting = null;

export function askForKey(error = "") {
  const dialog = document.getElementById("login");
  document.getElementById("login-error").textContent = error;
  if (!waiting) {
    waiting = new Promise((resolve) => {
      const form = document.getElementById("login-form");
      const input = document.getElementById("login-key");
      form.addEventListener(
        "submit",
        async (event) => {
          event.preventDefault();
          const { setKey } = await import("./api.js");
          setKey(input.value.trim());
          input.value = "";
          dialog.close();
          waiting = null;
          resolve();
        },
        { once: true },
      );
    });
  }
  if (!dialog.open) dialog.showModal();
  document.getElementById("login-key").focus();
  return waiting;
}
