import type { DestinationStatus, HealthStatus } from "../api.js";

// Every badge says its state in words (colour is never the only cue) and meets WCAG AA contrast.

const STATUS_LABEL: Record<DestinationStatus, string> = {
  active: "active",
  throttled: "throttled",
  rate_limited: "rate limited",
  quiet: "quiet hours",
  paused: "paused",
};

export function StatusBadge({ status }: { status: DestinationStatus }) {
  return <span class={`badge status-${status}`}>{STATUS_LABEL[status]}</span>;
}

export function HealthBadge({ status, score }: { status: HealthStatus; score?: number }) {
  return (
    <span class={`badge health-${status}`} title={score === undefined ? undefined : `health score ${Math.round(score)} of 100`}>
      {status}
      {score === undefined ? null : <span class="badge-score"> {Math.round(score)}</span>}
    </span>
  );
}

export function DeliveryBadge({ status }: { status: string }) {
  return <span class={`badge delivery-${status}`}>{status.replace("_", " ")}</span>;
}
