// The language button (tools/sphinx_ext/i18n.py) opens the same page in the other edition, in the
// same tab: the theme gives every header link target="_blank", which suits only outside sites.
// It opens it at the same place: the editions share their anchors (a section's id comes from
// the English source, a claim's is its number), so the page's current #hash is carried over.
document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("a.gpulab-language-button")) {
    link.removeAttribute("target");
    const follow = () => { link.hash = window.location.hash; };
    follow();
    window.addEventListener("hashchange", follow);
    link.addEventListener("click", follow);  // before the browser follows the link
  }
});
