// Small SVG charts: bars stacked per time bucket, and lines. Drawn as SVG (not canvas) so each
// bar carries a <title> a pointer or a screen reader can read, and the chart scales with CSS.

export interface Series {
  label: string;
  /** A CSS colour or var(). */
  color: string;
  values: (number | null)[];
}

interface ChartProps {
  /** Bucket start times (ISO), one per value. */
  at: string[];
  series: Series[];
  /** What the chart shows, for screen readers. */
  title: string;
  height?: number;
  /** A horizontal reference line (a configured limit). */
  limit?: { value: number; label: string } | null;
  unit?: string;
}

const W = 600;

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 2.5, 5, 10].find((m) => m * p >= v) ?? 10) * p;
}

function label(iso: string | undefined): string {
  if (!iso) return "";
  return new Date(iso).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", hour12: false });
}

function Axes({ max, height, at, unit }: { max: number; height: number; at: string[]; unit?: string }) {
  return (
    <g class="axes" aria-hidden="true">
      <line x1="0" x2={W} y1={height} y2={height} />
      <text x="2" y="10">
        {max.toLocaleString()}
        {unit ? ` ${unit}` : ""}
      </text>
      <text x="2" y={height + 14}>
        {label(at[0])}
      </text>
      <text x={W - 2} y={height + 14} text-anchor="end">
        {label(at[at.length - 1])}
      </text>
    </g>
  );
}

function Legend({ series, limit }: { series: Series[]; limit?: ChartProps["limit"] }) {
  return (
    <ul class="legend">
      {series.map((s) => (
        <li key={s.label}>
          <span class="swatch" style={{ background: s.color }} aria-hidden="true" />
          {s.label}
        </li>
      ))}
      {limit ? (
        <li>
          <span class="swatch swatch-limit" aria-hidden="true" />
          {limit.label}
        </li>
      ) : null}
    </ul>
  );
}

export function StackedBars({ at, series, title, height = 120, limit, unit }: ChartProps) {
  const totals = at.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = niceMax(Math.max(...totals, limit?.value ?? 0));
  const bw = W / Math.max(1, at.length);
  const y = (v: number) => height - (v / max) * height;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${height + 18}`} role="img" aria-label={title} preserveAspectRatio="none">
        <Axes max={max} height={height} at={at} unit={unit} />
        {at.map((t, i) => {
          let base = 0;
          return (
            <g key={t}>
              <title>{`${label(t)}: ${series.map((s) => `${s.label} ${s.values[i] ?? 0}`).join(", ")}`}</title>
              {series.map((s) => {
                const v = s.values[i] ?? 0;
                const top = y(base + v);
                const rect =
                  v > 0 ? <rect x={i * bw + 0.5} width={Math.max(1, bw - 1)} y={top} height={y(base) - top} fill={s.color} /> : null;
                base += v;
                return rect;
              })}
            </g>
          );
        })}
        {limit ? <line class="limit" x1="0" x2={W} y1={y(limit.value)} y2={y(limit.value)} /> : null}
      </svg>
      <Legend series={series} limit={limit} />
    </figure>
  );
}

export function Lines({ at, series, title, height = 120, limit, unit }: ChartProps) {
  const all = series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const max = niceMax(Math.max(0, ...all, limit?.value ?? 0));
  const x = (i: number) => (at.length <= 1 ? W / 2 : (i / (at.length - 1)) * W);
  const y = (v: number) => height - (v / max) * height;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${height + 18}`} role="img" aria-label={title} preserveAspectRatio="none">
        <Axes max={max} height={height} at={at} unit={unit} />
        {series.map((s) => {
          let d = "";
          s.values.forEach((v, i) => {
            if (v === null) return;
            d += `${d && s.values[i - 1] !== null ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
          });
          // A value with no neighbour (a lone busy minute) is a point no path can show: mark it.
          const lone = s.values.flatMap((v, i) =>
            v !== null && (s.values[i - 1] ?? null) === null && (s.values[i + 1] ?? null) === null ? [{ i, v }] : [],
          );
          return (
            <g key={s.label}>
              <path d={d} fill="none" stroke={s.color} stroke-width="2" vector-effect="non-scaling-stroke" />
              {lone.map(({ i, v }) => (
                <line
                  key={i}
                  x1={x(i) - 3}
                  x2={x(i) + 3}
                  y1={y(v)}
                  y2={y(v)}
                  stroke={s.color}
                  stroke-width="6"
                  stroke-linecap="round"
                  vector-effect="non-scaling-stroke"
                />
              ))}
            </g>
          );
        })}
        {limit ? <line class="limit" x1="0" x2={W} y1={y(limit.value)} y2={y(limit.value)} /> : null}
      </svg>
      <Legend series={series} limit={limit} />
    </figure>
  );
}
