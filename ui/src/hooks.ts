import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export interface Polled<T> {
  data: T | undefined;
  error: Error | undefined;
  reload: () => void;
}

/**
 * Loads now and every `everyMs` (0 = once), keeping the last answer on screen while the next
 * one loads, so a refresh never flickers; pauses while the tab is hidden.
 */
export function usePoll<T>(load: () => Promise<T>, everyMs: number, deps: unknown[]): Polled<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const loadRef = useRef(load);
  loadRef.current = load;
  const seq = useRef(0);
  const stop = useRef<(() => void) | null>(null);

  const run = useCallback(() => {
    const mine = ++seq.current;
    loadRef.current().then(
      (d) => {
        if (mine !== seq.current) return;
        setData(d);
        setError(undefined);
      },
      (e: unknown) => {
        if (mine !== seq.current) return;
        setError(e instanceof Error ? e : new Error(String(e)));
        // Not there (a wrong id, or outside a portal's scope): asking again will not change that.
        if ((e as { status?: unknown }).status === 404) stop.current?.();
      },
    );
  }, []);

  useEffect(() => {
    setData(undefined);
    setError(undefined);
    run();
    if (!everyMs) return;
    const t = setInterval(() => {
      if (document.visibilityState !== "hidden") run();
    }, everyMs);
    stop.current = () => clearInterval(t);
    return () => {
      clearInterval(t);
      seq.current++;
    };
  }, deps);

  return { data, error, reload: run };
}

/** The current time, updated every `everyMs` (for countdowns). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}
