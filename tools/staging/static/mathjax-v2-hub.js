// The widget manager (embed-amd.js) typesets a widget's text with MathJax v2's API,
// `MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])`, whenever window.MathJax exists. The
// site loads MathJax v3, which has no Hub, so each widget holding text threw a TypeError.
// This gives the MathJax v3 object a Hub whose Queue typesets through v3's typesetPromise.
// Sphinx loads MathJax asynchronously, before or after this file runs, and MathJax replaces
// window.MathJax as it starts; so the Hub goes onto the object there now and onto any
// assigned later. Loaded before embed-amd.js, on the pages that hold widgets (_config.yml).
"use strict";
(() => {
  const hub = {
    // v2 queues commands ([name, object, argument]) and callbacks; the manager sends Typeset
    Queue(...jobs) {
      const mathjax = window.MathJax;
      for (const job of jobs) {
        if (Array.isArray(job) && job[0] === "Typeset" && mathjax?.startup) {
          const element = job[2];
          mathjax.startup.promise.then(() => mathjax.typesetPromise(element ? [element] : undefined));
        } else if (typeof job === "function") {
          job();
        }
      }
    },
  };
  const withHub = (value) => {
    // v3's own object carries its version; a configuration object assigned before it does not
    if (value !== null && typeof value === "object" && value.version && !value.Hub) {
      value.Hub = hub;
    }
    return value;
  };
  let current = withHub(window.MathJax);
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (value) => {
      current = withHub(value);
    },
  });
})();
