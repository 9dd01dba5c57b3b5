// ESLint (flat config) for the course's own JavaScript: the static calculators' glue, shipped
// as package data in src/gpulab/ui/js/, and its node tests in tests/js/. `make lint` runs it.
import js from "@eslint/js";
import globals from "globals";

const strict = {
  eqeqeq: "error",
  "no-var": "error",
  "prefer-const": "error",
  "no-unused-vars": ["error", { args: "after-used" }],
  "no-implicit-globals": "error",
  "no-console": "error",
};

export default [
  { ignores: ["node_modules/", "_build/", ".venv/", "book/_widgets_static/"] },
  js.configs.recommended,
  {
    files: ["src/gpulab/ui/js/**/*.mjs"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.browser },
    rules: strict,
  },
  {
    // classic scripts the site loads beside require.js (tools/staging/stage.py copies them)
    files: ["tools/staging/static/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "script",
                       globals: { ...globals.browser, require: "readonly" } },
    rules: strict,
  },
  {
    files: ["tests/js/**/*.mjs", "eslint.config.mjs"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.node },
    rules: { ...strict, "no-console": "off" },
  },
];
