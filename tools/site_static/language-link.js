// The language button (tools/sphinx_i18n.py) opens the same page in the other edition, in the
// same tab: the theme gives every header link target="_blank", which suits only outside sites.
document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("a.gpulab-language-button")) {
    link.removeAttribute("target");
  }
});
