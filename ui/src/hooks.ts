import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { startPoller, type Poller } from "./poller.js";

export interface Polled<T> {
  data: T | undefined;
  error: Error | undefined;
  reload: () => void;
}

/**
 * Loads now and again `everyMs` after each answer (0 = once), keeping the last answer on screen
 * while the next one loads, so a refresh never flickers; one load at a time (poller.ts), none
 * while the tab is hidden. A 404 stops the polling: asking again will not change it.
 */
export function usePoll<T>(load: () => Promise<T>, everyMs: number, deps: unknown[]): Polled<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const loadRef = useRef(load);
  loadRef.current = load;
  const poller = useRef<Poller | null>(null);

  useEffect(() => {
    setData(undefined);
    setError(undefined);
    const p = startPoller<T>({
      load: () => loadRef.current(),
      everyMs,
      hidden: () => document.visibilityState === "hidden",
      onAnswer: (d) => {
        setData(d);
        setError(undefined);
      },
      onError: (e) => {
        setError(e instanceof Error ? e : new Error(String(e)));
        // Not there (a wrong id, or outside a portal's scope): asking again will not change that.
        if ((e as { status?: unknown }).status === 404) p.stopRepeating();
      },
    });
    poller.current = p;
    return () => p.stop();
  }, deps);

  const reload = useCallback(() => poller.current?.reload(), []);
  return { data, error, reload };
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
