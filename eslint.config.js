// Lint: typescript-eslint's type-checked rules (as graphile-worker runs them), over src, test,
// bench and scripts. `npm run lint`; part of `npm run check`.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "bench/results/", "coverage/", "sdk/dist/", "sdk/src/openapi.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // The plain scripts are outside tsconfig's program; each is given a default project, which
        // typescript-eslint caps at 8 files unless told (they are few and small, so the cost is too).
        projectService: {
          allowDefaultProject: ["*.js", "bin/*.js", "scripts/*.mjs"],
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 20,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A promise nobody awaits or catches is an unhandled rejection waiting to end the process.
      // node:test's test()/describe() return promises the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            {
              from: "package",
              package: "node:test",
              name: ["test", "describe", "it", "suite", "before", "after", "beforeEach", "afterEach"],
            },
          ],
        },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      // Fastify handlers and hooks are async by contract, and so are Db methods that PGlite
      // answers synchronously: an async function without await is normal here.
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" },
      ],
    },
  },
  {
    // Plain JS scripts run before node_modules exist; they are linted without type information.
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        URL: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        Buffer: "readonly",
      },
    },
  },
);
