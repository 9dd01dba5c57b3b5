// The widget manager (embed-amd.js) loads its icon fonts from the folder of its AMD module,
// which require.js places beside the page ("notebooks/@jupyter-widgets/html-manager/dist/").
// The site copies those fonts into _static/, so the module's folder is pointed there.
"use strict";
(() => {
  const root = new URL(document.documentElement.dataset.content_root || "./", document.location);
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": new URL("_static", root).href } });
})();
