/**
 * The Mann-Whitney U test (Wilcoxon rank-sum), as Kayenta's canary judge uses it: does the
 * canary's sample sit higher (or lower) than the baseline's? It compares ranks, not means, so it
 * asks nothing of the metrics' distribution (latencies and error shares are skewed, counters are
 * steps) and one outlier moves it by one rank only. The p-value is the normal approximation with
 * the tie correction and the continuity correction (scipy's `mannwhitneyu(..., method='asymptotic')`);
 * the size of the shift is the Hodges-Lehmann estimate (the median of every canary - baseline
 * difference), which the verdict holds against the metric's tolerance.
 */

/** What the test found for the canary `x` against the baseline `y`. */
export interface RankTest {
  /** U of the canary: the number of (canary, baseline) pairs where the canary is higher, ties counting one half. */
  u: number
  /** P(canary's values are not higher than the baseline's | the data): small = the canary is significantly higher. */
  pGreater: number
  /** The same for lower. */
  pLess: number
  /** Hodges-Lehmann estimate of canary - baseline. */
  shift: number
}

/** The standard normal's upper tail, P(Z > z) (Abramowitz-Stegun 7.1.26 through erfc; error below 1.5e-7). */
export function normalUpperTail(z: number): number {
  const x = Math.abs(z) / Math.SQRT2
  const t = 1 / (1 + 0.3275911 * x)
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
  const erfc = poly * Math.exp(-x * x)
  return z >= 0 ? erfc / 2 : 1 - erfc / 2
}

/** Average ranks (1-based) of `values`, and the tie term Σ(t³ - t) over groups of equal values. */
function rank(values: number[]): { ranks: number[]; ties: number } {
  const order = values.map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0])
  const ranks = new Array<number>(values.length)
  let ties = 0
  for (let i = 0; i < order.length;) {
    let j = i
    while (j + 1 < order.length && order[j + 1]![0] === order[i]![0]) j++
    const average = (i + j) / 2 + 1
    for (let k = i; k <= j; k++) ranks[order[k]![1]] = average
    const t = j - i + 1
    ties += t * t * t - t
    i = j + 1
  }
  return { ranks, ties }
}

/** The median of `values` (NaN when empty). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const s = [...values].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** Mann-Whitney U of canary `x` against baseline `y`, both non-empty. */
export function mannWhitney(x: readonly number[], y: readonly number[]): RankTest {
  const n1 = x.length
  const n2 = y.length
  if (n1 === 0 || n2 === 0) throw new RangeError('mannWhitney: both samples need at least one value')
  const { ranks, ties } = rank([...x, ...y])
  const r1 = ranks.slice(0, n1).reduce((a, b) => a + b, 0)
  const u = r1 - (n1 * (n1 + 1)) / 2
  const n = n1 + n2
  const mean = (n1 * n2) / 2
  const variance = ((n1 * n2) / 12) * (n + 1 - ties / (n * (n - 1)))
  const sd = Math.sqrt(Math.max(0, variance))
  // Every value equal: nothing tells the sides apart.
  const pGreater = sd === 0 ? 1 : normalUpperTail((u - mean - 0.5) / sd)
  const pLess = sd === 0 ? 1 : 1 - normalUpperTail((u - mean + 0.5) / sd)
  const differences: number[] = []
  for (const a of x) for (const b of y) differences.push(a - b)
  return { u, pGreater: Math.min(1, pGreater), pLess: Math.min(1, pLess), shift: median(differences) }
}
