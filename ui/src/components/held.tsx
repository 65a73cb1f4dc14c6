import type { HeldGroup } from "../api.js";
import { count, duration } from "../format.js";

// Why deliveries are held, the same way on every page: a name in words and a colour for charts.

type Reason = HeldGroup["reason"];

export const HOLD_LABELS: Record<Reason, string> = {
  paused: "paused",
  throttled: "throttled (429)",
  quiet_hours: "quiet hours",
  scheduled: "scheduled for later",
  ordering: "waiting their turn (ordered)",
  concurrency: "at max concurrency",
  rate_limited: "rate limit",
};

export const HOLD_COLORS: Record<Reason, string> = {
  paused: "var(--chart-bad)",
  throttled: "var(--chart-warn)",
  rate_limited: "var(--chart-rate)",
  quiet_hours: "var(--chart-quiet)",
  scheduled: "var(--chart-info)",
  ordering: "var(--chart-ordering)",
  concurrency: "var(--chart-concurrency)",
};

/** Held deliveries by reason: how many, and how long the oldest has waited. */
export function HeldTable({ groups, caption, visibleCaption }: { groups: HeldGroup[]; caption: string; visibleCaption?: boolean }) {
  return (
    <div class="table-wrap held-now">
      <table>
        <caption class={visibleCaption ? undefined : "sr-only"}>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Reason</th>
            <th scope="col" class="num">
              Held
            </th>
            <th scope="col" class="num">
              Oldest waiting
            </th>
          </tr>
        </thead>
        <tbody>
          {groups.map((h) => (
            <tr key={h.reason} data-reason={h.reason}>
              <td>
                <span class="swatch" style={{ background: HOLD_COLORS[h.reason] }} aria-hidden="true" />
                {HOLD_LABELS[h.reason]}
              </td>
              <td class="num">{count(h.n)}</td>
              <td class="num">{duration(h.oldest_age_seconds * 1000)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
