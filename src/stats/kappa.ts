/**
 * Cohen's κ (1960) for two raters over the same items, with its 95 % interval from the
 * large-sample standard error of Fleiss, Cohen & Everitt (1969), the non-null one (the SE at the
 * estimated κ, not the SE under κ = 0 that a test of "no agreement beyond chance" uses):
 *
 *   SE² = [ Σᵢ pᵢᵢ (1 − (pᵢ. + p.ᵢ)(1 − κ))² + (1 − κ)² Σᵢ≠ⱼ pᵢⱼ (p.ᵢ + pⱼ.)² − (κ − pₑ(1 − κ))² ] / (n (1 − pₑ)²)
 *
 * and κ ± 1.96 SE, cut to [−1, 1]. It is the interval of Fleiss, Levin & Paik (Statistical
 * Methods for Rates and Proportions, 3rd ed., § 18.1); with few items it is rough (a guide, not a
 * guarantee), and at κ = 1 it collapses to [1, 1].
 */

/** Φ⁻¹(0.975): the 95 % two-sided normal quantile. */
const Z95 = 1.959963984540054;

export interface Kappa {
  /** null when κ is undefined: the first rater (the person) used one class only */
  estimate: number | null;
  /** null with κ, and when the second rater (the judge) used one class only: κ is then 0 by construction */
  standardError: number | null;
  low: number | null;
  high: number | null;
}

const undefinedKappa: Kappa = { estimate: null, standardError: null, low: null, high: null };

/**
 * κ of a k×k table of counts, `table[i][j]`: items the first rater put in class i and the second
 * in class j. Undefined (every field null) without items, or when the first rater's items all
 * fall in one class: chance agreement is then the second rater's own rate, and κ is 0 (or 0/0)
 * whatever the second rater does, so it says nothing. When the second rater's items all fall in
 * one class, κ is 0 (no better than chance) with no interval.
 */
export function cohenKappa(table: number[][]): Kappa {
  const k = table.length;
  const n = table.reduce((sum, row) => sum + row.reduce((a, b) => a + b, 0), 0);
  if (n === 0) return undefinedKappa;
  const p = table.map((row) => row.map((count) => count / n));
  const rows = p.map((row) => row.reduce((a, b) => a + b, 0));
  const cols = p[0]!.map((_, j) => p.reduce((sum, row) => sum + row[j]!, 0));
  if (rows.filter((share) => share > 0).length < 2) return undefinedKappa;
  // The second rater in one class: agreement is chance agreement, κ 0 by construction, and the SE
  // formula gives 0 — an interval [0, 0] that would claim a certainty nothing measured.
  if (cols.filter((share) => share > 0).length < 2) return { estimate: 0, standardError: null, low: null, high: null };
  let observed = 0;
  let chance = 0;
  for (let i = 0; i < k; i++) {
    observed += p[i]![i]!;
    chance += rows[i]! * cols[i]!;
  }
  const kappa = (observed - chance) / (1 - chance);
  let diagonal = 0;
  let offDiagonal = 0;
  for (let i = 0; i < k; i++) {
    diagonal += p[i]![i]! * (1 - (rows[i]! + cols[i]!) * (1 - kappa)) ** 2;
    for (let j = 0; j < k; j++) if (i !== j) offDiagonal += p[i]![j]! * (cols[i]! + rows[j]!) ** 2;
  }
  const variance = (diagonal + (1 - kappa) ** 2 * offDiagonal - (kappa - chance * (1 - kappa)) ** 2) / (n * (1 - chance) ** 2);
  // Rounding can leave a true zero (κ = 1) a hair below it.
  const standardError = Math.sqrt(Math.max(0, variance));
  return {
    estimate: kappa,
    standardError,
    low: Math.max(-1, kappa - Z95 * standardError),
    high: Math.min(1, kappa + Z95 * standardError),
  };
}
