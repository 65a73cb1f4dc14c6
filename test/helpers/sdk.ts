import assert from "node:assert/strict";
import { SluiceApiError } from "../../sdk/src/index.js";

// For tests that drive Sluice through the SDK (sdk/): the error answer a call must end in.

/**
 * The SluiceApiError `call` rejects with, to assert on its status, code, message and fields; the
 * test fails when the call succeeds or throws anything else.
 */
export async function apiError(call: Promise<unknown>): Promise<SluiceApiError> {
  const outcome = await call.then(
    (body: unknown) => ({ body }),
    (err: unknown) => ({ err }),
  );
  if (!("err" in outcome)) assert.fail(`expected an error answer, got ${JSON.stringify(outcome.body) ?? "no body"}`);
  assert.ok(outcome.err instanceof SluiceApiError, `expected a SluiceApiError, got ${String(outcome.err)}`);
  return outcome.err;
}
