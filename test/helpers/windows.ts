// Checks arrival times against a token-bucket contract, the way an auditor at the receiver would.

/**
 * The first window spanned by two arrivals holding more than `burst + rate × (length + jitter)`,
 * or null. `jitterMs` allows for arrivals displaced from their send times (network, a busy event
 * loop): a send the bucket allowed can arrive up to that much closer to its neighbours.
 */
export function worstWindow(
  arrivalsMs: number[],
  perSecond: number,
  burst: number,
  jitterMs = 0,
): { from: number; to: number; count: number; allowed: number } | null {
  const t = [...arrivalsMs].sort((a, b) => a - b);
  for (let i = 0; i < t.length; i++) {
    for (let j = i; j < t.length; j++) {
      const count = j - i + 1;
      const allowed = burst + (perSecond * (t[j]! - t[i]! + jitterMs)) / 1000;
      if (count > allowed + 1e-9) return { from: t[i]!, to: t[j]!, count, allowed };
    }
  }
  return null;
}
