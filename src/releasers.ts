// Start and stop by one list: each component, as it starts, pushes what stops it; stop runs them
// last-in, first-out, so a component stops before whatever it was started on. A start that fails
// halfway stops exactly what had started. Intake (the API's listener) stops first of all, before
// the stack: no new work is taken while the rest winds down.

type Release = () => void | Promise<void>;

export class Releasers {
  private readonly stack: { name: string; release: Release }[] = [];
  private readonly intake: { name: string; release: Release }[] = [];
  private released: Promise<void> | null = null;

  /** What stops a component just started (`name` for the log, should it fail). */
  push(name: string, release: Release): void {
    this.stack.push({ name, release });
  }

  /** What stops taking new work: run before everything pushed. */
  pushIntake(name: string, release: Release): void {
    this.intake.push({ name, release });
  }

  /**
   * Runs every release once (intake first, then the stack from the top). A release that throws is
   * reported to `onError` and the others still run. Calls after the first share its promise.
   */
  releaseAll(onError: (name: string, err: unknown) => void): Promise<void> {
    this.released ??= (async () => {
      for (const r of [...this.intake, ...this.stack.reverse()]) {
        try {
          await r.release();
        } catch (err) {
          onError(r.name, err);
        }
      }
    })();
    return this.released;
  }
}
