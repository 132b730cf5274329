// The only script on the site: "copy" buttons put the text of their target element on the clipboard.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy-target]");
  if (!button) return;
  const target = document.getElementById(button.dataset.copyTarget);
  if (!target) return;
  try {
    await navigator.clipboard.writeText(target.textContent);
    button.dataset.state = "copied";
    button.textContent = "Copied";
  } catch (err) {
    button.dataset.state = "failed";
    button.textContent = "Copy failed: select the text";
  }
});
