// Types for scripts/ensure-deps.mjs (plain JS, so it runs before node_modules exist).
export function findPostgresBinDir(): string | undefined;
export function findPromtool(): string | undefined;
export function postgresUserExists(): boolean;
/** Debian's chromium (or SLUICE_TEST_CHROMIUM), or undefined. */
export function findChromium(): string | undefined;
export function findPgBouncer(): string | undefined;
