/**
 * The per-conversation test of the gate on every attempt: an exact unconditional test on both
 * sides' counts, with the false-alarm rate held at the supremum over the unknown common pass rate.
 *
 * Under "no difference" every judged attempt of either side passes with the same probability p,
 * independently (the sessions of a round are independent: the pairing schedules them, it does not
 * make them alike). The statistic is the pooled z of the two pass rates (Suissa and Shuster's
 * ordering for Barnard's test):
 *
 *   z = (x/nB − y/nC) / √(p̄(1 − p̄)(1/nB + 1/nC)),  p̄ = (x + y)/(nB + nC),  0 when p̄ is 0 or 1,
 *
 * large when the baseline passes more often. The chance of an event about the counts, under p, is
 * a polynomial in p: Σ w(t, s) p^s (1 − p)^(t − s) over the outcomes of t attempts with s passes,
 * where w(t, s) counts the ways (the paths) that end there. The false-alarm rate is its supremum over
 * p (`supremum`).
 *
 * - `repeat: N`: one look, p-value sup_p P_p(z ≥ z_observed) over the judged attempts of each side
 *   (Barnard's test with the pooled z).
 * - Sequential: the k-th judged baseline attempt is paired with the k-th judged candidate attempt,
 *   and after n pairs (from n = r0 on, each look) the rule asks whether z_n ≥ C·g(n), a boundary
 *   shaped g(n) = (n/R)^(Δ − ½) (Wang and Tsiatis), C the smallest value whose crossing
 *   probability over n = r0…R is at most the level at every p. Looking less (a round whose attempt
 *   erred adds no pair), or stopping early, only lowers it. The sequential p-value of a path is
 *   F(M), M the largest z_n/g(n) over its looks and F(m) = sup_p P_p(some look of n = r0…R has
 *   z_n/g(n) ≥ m): P(F(M) ≤ u) ≤ u for every u, so it goes into Holm's procedure like a p-value.
 *
 * Path counts are doubles: C(n, x)·C(n, y) ≤ 4^n stays far inside their range for n ≤ 500.
 */

/** Δ of the boundary shape: 0.5 is Pocock's (flat), 0 O'Brien and Fleming's (steep early). */
const BOUNDARY_SHAPE = 0.25;

/** Two values computed the same way may differ in the last bits: "at least" allows for it. */
const SLACK = 1e-9;

/** Whether `value` reaches `threshold` (the one comparison every rule and every calibration uses). */
function reaches(value: number, threshold: number): boolean {
  return value >= threshold - SLACK;
}

/** The pooled z of x of nB baseline passes against y of nC candidate passes; 0 without a side or without variation. */
export function pooledZ(nB: number, x: number, nC: number, y: number): number {
  if (nB === 0 || nC === 0) return 0;
  const n = nB + nC;
  const s = x + y;
  if (s === 0 || s === n) return 0;
  const pooled = s / n;
  return (x / nB - y / nC) / Math.sqrt(pooled * (1 - pooled) * (1 / nB + 1 / nC));
}

/** g(n) = (n/R)^(Δ − ½): the boundary's shape, 1 at the last look. */
export function boundaryShape(n: number, maxPairs: number, shape = BOUNDARY_SHAPE): number {
  return (n / maxPairs) ** (shape - 0.5);
}

/**
 * A polynomial in the pass rate p as a list of terms w·p^s(1 − p)^(t − s), kept as logarithms of
 * w, so that large counts and small powers meet without overflow.
 */
export interface RatePolynomial {
  logWeight: number[];
  passes: number[];
  attempts: number[];
}

function emptyPolynomial(): RatePolynomial {
  return { logWeight: [], passes: [], attempts: [] };
}

/**
 * The polynomial as a function of p. Terms come grouped by attempts t with s ascending (as both
 * builders push them), so within a group p^s(1 − p)^(t − s) is one exponential and then a product
 * per term, walked from the group's largest term down (ascending s when p ≤ ½, descending when
 * p > ½): a term that underflows on the way is one too small to count. What does not depend on p
 * is found once here (the weights' exponentials, the groups, the gaps between successive s), and
 * per p the steps ((p/(1 − p))^gap, or its inverse) once per gap, not once per term: a supremum
 * evaluates the same polynomial some 180 times, so this is most of a sequential p-value's cost.
 * The arithmetic per p is the same as term by term, so are the values, to the last bit.
 */
function evaluator(polynomial: RatePolynomial): (p: number) => number {
  const { passes, attempts } = polynomial;
  const weights = Float64Array.from(polynomial.logWeight, Math.exp);
  const starts: number[] = [];
  const gaps = new Int32Array(passes.length);
  let widest = 1;
  for (let i = 0; i < passes.length; i++) {
    if (i === 0 || attempts[i] !== attempts[i - 1]) starts.push(i);
    else {
      gaps[i] = passes[i]! - passes[i - 1]!;
      widest = Math.max(widest, gaps[i]!);
    }
  }
  starts.push(passes.length);
  const steps = new Float64Array(widest + 1);
  return (p: number): number => {
    const logP = Math.log(p);
    const logQ = Math.log(1 - p);
    const up = p <= 0.5;
    const ratio = up ? p / (1 - p) : (1 - p) / p;
    steps[0] = 1;
    steps[1] = ratio;
    for (let gap = 2; gap <= widest; gap++) steps[gap] = ratio ** gap;
    let sum = 0;
    for (let group = 0; group + 1 < starts.length; group++) {
      const start = starts[group]!;
      const end = starts[group + 1]! - 1;
      const t = attempts[start]!;
      const first = up ? start : end;
      const s = passes[first]!;
      let power = Math.exp(s * logP + (t - s) * logQ);
      sum += weights[first]! * power;
      if (up) {
        for (let i = start + 1; i <= end; i++) {
          power *= steps[gaps[i]!]!;
          sum += weights[i]! * power;
        }
      } else {
        for (let i = end - 1; i >= start; i--) {
          power *= steps[gaps[i + 1]!]!;
          sum += weights[i]! * power;
        }
      }
    }
    return sum;
  };
}

/** The pass rates the supremum is first looked for at: 0.01, 0.02, …, 0.99. */
const GRID = Array.from({ length: 99 }, (_, i) => (i + 1) / 100);

/**
 * sup over p in (0, 1) of the polynomial: its values on a grid of step 0.01, then a golden-section
 * search in the two grid steps around each of the three largest, to 1e-7 in p. The function is
 * smooth and has few local maxima (it is a probability summed over paths), so the grid finds
 * the bumps and the search their tops.
 */
function supremum(polynomial: RatePolynomial): { value: number; rate: number } {
  if (polynomial.logWeight.length === 0) return { value: 0, rate: 0.5 };
  const at = evaluator(polynomial);
  const values = GRID.map(at);
  const order = values.map((value, index) => ({ value, index })).sort((a, b) => b.value - a.value);
  let best = { value: order[0]!.value, rate: GRID[order[0]!.index]! };
  for (const { index } of order.slice(0, 3)) {
    let low = index === 0 ? 1e-6 : GRID[index - 1]!;
    let high = index === GRID.length - 1 ? 1 - 1e-6 : GRID[index + 1]!;
    const ratio = (Math.sqrt(5) - 1) / 2;
    let a = high - ratio * (high - low);
    let b = low + ratio * (high - low);
    let fa = at(a);
    let fb = at(b);
    while (high - low > 1e-7) {
      if (fa >= fb) {
        high = b;
        b = a;
        fb = fa;
        a = high - ratio * (high - low);
        fa = at(a);
      } else {
        low = a;
        a = b;
        fa = fb;
        b = low + ratio * (high - low);
        fb = at(b);
      }
    }
    for (const [value, rate] of [
      [fa, a],
      [fb, b],
    ] as const) {
      if (value > best.value) best = { value, rate };
    }
  }
  return best;
}

/** ln C(n, k) for k = 0…n. */
function logBinomialRow(n: number): Float64Array {
  const row = new Float64Array(n + 1);
  for (let k = 1; k <= n; k++) row[k] = row[k - 1]! + Math.log((n - k + 1) / k);
  return row;
}

/**
 * Barnard's one-sided p-value with the pooled z: sup_p P_p(z(X, Y) ≥ z(x, y)), X ~ Bin(nB, p) and
 * Y ~ Bin(nC, p) independent. 1 without an attempt on a side.
 */
export function barnardPValue(nB: number, x: number, nC: number, y: number): number {
  if (nB === 0 || nC === 0) return 1;
  const observed = pooledZ(nB, x, nC, y);
  if (observed <= 0) return 1;
  const rowB = logBinomialRow(nB);
  const rowC = logBinomialRow(nC);
  // Outcomes as extreme as observed, merged by their number of passes.
  const bySum = new Float64Array(nB + nC + 1);
  const logMax = new Float64Array(nB + nC + 1).fill(-Infinity);
  const extreme: Array<[number, number]> = [];
  for (let i = 0; i <= nB; i++) {
    for (let j = 0; j <= nC; j++) {
      if (!reaches(pooledZ(nB, i, nC, j), observed)) continue;
      extreme.push([i, j]);
      logMax[i + j] = Math.max(logMax[i + j]!, rowB[i]! + rowC[j]!);
    }
  }
  for (const [i, j] of extreme) bySum[i + j]! += Math.exp(rowB[i]! + rowC[j]! - logMax[i + j]!);
  const polynomial = emptyPolynomial();
  bySum.forEach((weight, s) => {
    if (weight === 0) return;
    polynomial.logWeight.push(Math.log(weight) + logMax[s]!);
    polynomial.passes.push(s);
    polynomial.attempts.push(nB + nC);
  });
  return Math.min(1, supremum(polynomial).value);
}

/**
 * Whether n pairs with s passes in all, d more of them the baseline's, reach the threshold over
 * g(n). (A function, not a closure per cell: the table has R² cells.)
 */
function crossesAt(n: number, s: number, d: number, g: number, threshold: number): boolean {
  return reaches(pooledZ(n, (s + d) / 2, n, (s - d) / 2) / g, threshold);
}

/**
 * Where a boundary is crossed, as a table: `table[n][s]` is the smallest difference x − y of
 * baseline over candidate passes, among n pairs with s passes in all, for which z_n/g(n) reaches
 * `threshold` (z grows with x − y when n and s are fixed); 2n + 1 (never) before the first look
 * and where none does. The rule and every probability computed for it read the same table.
 */
export function crossingTable(threshold: number, firstLook: number, maxPairs: number, shape = BOUNDARY_SHAPE): Int32Array[] {
  const table: Int32Array[] = [new Int32Array(1).fill(1)];
  for (let n = 1; n <= maxPairs; n++) {
    const row = new Int32Array(2 * n + 1).fill(2 * n + 1);
    table.push(row);
    if (n < firstLook) continue;
    const g = boundaryShape(n, maxPairs, shape);
    for (let s = 1; s < 2 * n; s++) {
      // x − y has the parity of s and is at most min(s, 2n − s); z = (x − y)·√(2n / (s(2n − s))).
      const top = Math.min(s, 2 * n - s);
      let d = Math.max(
        s % 2,
        Math.min(top, 2 * Math.ceil((threshold * g * Math.sqrt((s * (2 * n - s)) / (2 * n)) - (s % 2)) / 2) + (s % 2)),
      );
      while (d - 2 >= 1 && crossesAt(n, s, d - 2, g, threshold)) d -= 2;
      while (d <= top && !crossesAt(n, s, d, g, threshold)) d += 2;
      if (d <= top && d > 0) row[s] = d;
    }
  }
  return table;
}

/**
 * The paths of n = 1…R pairs that cross (see `crossingTable`), counted by where they first do
 * (n pairs, s passes in all): the crossing probability as a polynomial in p. Paths are counted
 * once for each order of outcomes, so the four outcomes of a pair each add one.
 */
export function crossingPolynomial(table: readonly Int32Array[]): RatePolynomial {
  const polynomial = emptyPolynomial();
  const maxPairs = table.length - 1;
  const width = maxPairs + 1;
  let counts = new Float64Array(width * width); // index x * width + y, paths not yet crossed
  let next = new Float64Array(width * width);
  counts[0] = 1;
  for (let n = 1; n <= maxPairs; n++) {
    next.fill(0, 0, (n + 1) * width);
    for (let x = 0; x < n; x++) {
      const from = x * width;
      for (let y = 0; y < n; y++) {
        const count = counts[from + y]!;
        if (count === 0) continue;
        next[from + y]! += count;
        next[from + width + y]! += count;
        next[from + y + 1]! += count;
        next[from + width + y + 1]! += count;
      }
    }
    [counts, next] = [next, counts];
    const row = table[n]!;
    const crossed = new Float64Array(2 * n + 1);
    let any = false;
    for (let x = 1; x <= n; x++) {
      for (let y = 0; y < x; y++) {
        const index = x * width + y;
        if (counts[index] === 0 || x - y < row[x + y]!) continue;
        crossed[x + y]! += counts[index]!;
        counts[index] = 0;
        any = true;
      }
    }
    if (!any) continue;
    crossed.forEach((count, s) => {
      if (count === 0) return;
      polynomial.logWeight.push(Math.log(count));
      polynomial.passes.push(s);
      polynomial.attempts.push(2 * n);
    });
  }
  return polynomial;
}

const crossings = new Map<string, number>();
const criticals = new Map<string, number>();

/** F(m): sup_p of the chance that some look of n = r0…R pairs has z_n/g(n) ≥ m. Cached. */
export function crossingProbability(threshold: number, firstLook: number, maxPairs: number, shape = BOUNDARY_SHAPE): number {
  const key = `${threshold} ${firstLook} ${maxPairs} ${shape}`;
  let value = crossings.get(key);
  if (value === undefined) {
    value = Math.min(1, supremum(crossingPolynomial(crossingTable(threshold, firstLook, maxPairs, shape))).value);
    crossings.set(key, value);
  }
  return value;
}

/**
 * C(level, r0, R): the smallest value of z_n/g(n) the looks can take whose crossing probability is
 * at most the level at every pass rate (F changes only at those values). Found in two bisections
 * over them: first with the chance at p = ½ alone (a lower bound of the supremum, one term sum per
 * step), then from there up with the supremum itself, galloping; the supremum has sat at ½ for every
 * design tried, so that takes one step. Infinity when no value is rare enough (the rule
 * never rejects). Cached.
 */
export function criticalValue(level: number, firstLook: number, maxPairs: number, shape = BOUNDARY_SHAPE): number {
  return finish(criticalSearch(level, firstLook, maxPairs, shape));
}

/**
 * The search of `criticalValue` in steps: it yields after the values are listed, after they are
 * sorted, and after each boundary whose crossing chance it computes (a crossing table and a DP
 * over the looks, about 25 ms at R = 200 and some 25 steps in all), so that a caller on the
 * event loop (`designGateYielding`) can let it turn between steps. The same steps either way.
 */
export function* criticalSearch(level: number, firstLook: number, maxPairs: number, shape = BOUNDARY_SHAPE): Generator<void, number> {
  const key = `${level} ${firstLook} ${maxPairs} ${shape}`;
  const cached = criticals.get(key);
  if (cached !== undefined) return cached;
  const values: number[] = [];
  for (let n = firstLook; n <= maxPairs; n++) {
    const g = boundaryShape(n, maxPairs, shape);
    for (let x = 1; x <= n; x++) for (let y = 0; y < x; y++) values.push(pooledZ(n, x, n, y) / g);
  }
  yield;
  // Repeated values do no harm to a bisection: no Set (hashing a million doubles takes a second).
  const sorted = Float64Array.from(values).sort();
  yield;
  const rareAtHalf = (threshold: number) =>
    evaluator(crossingPolynomial(crossingTable(threshold, firstLook, maxPairs, shape)))(0.5) <= level;
  const rare = (threshold: number) => crossingProbability(threshold, firstLook, maxPairs, shape) <= level;
  function* search(low: number, high: number, rareEnough: (threshold: number) => boolean): Generator<void, number> {
    // low: crosses too often (or -1); high: rare enough (or past the end).
    while (high - low > 1) {
      const middle = (low + high) >> 1;
      if (rareEnough(sorted[middle]!)) high = middle;
      else low = middle;
      yield;
    }
    return high;
  }
  let low = (yield* search(-1, sorted.length, rareAtHalf)) - 1;
  // Gallop up from there with the supremum: 1, 2, 4, … values further until one is rare enough.
  let step = 1;
  while (low + step < sorted.length && !rare(sorted[low + step]!)) {
    low += step;
    step *= 2;
    yield;
  }
  const index = yield* search(low, Math.min(low + step, sorted.length), rare);
  const critical = index < sorted.length ? sorted[index]! : Infinity;
  criticals.set(key, critical);
  return critical;
}

/** A stepwise computation run to its end in one piece. */
export function finish<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
  }
}

/** A stepwise computation run to its end, the event loop turning once between steps. */
export async function finishYielding<T>(steps: Generator<void, T>): Promise<T> {
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
