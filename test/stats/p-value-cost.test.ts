import t from 'tap';
import { barnardPValue, crossingProbability } from '../../src/stats/unconditional.js';

/**
 * A supremum evaluates one polynomial some 180 times; the evaluation was made cheaper (the gaps'
 * powers found once per pass rate, not once per term) with the same arithmetic. These values were
 * computed term by term before the change and must stay the same to the last bit: a sequential
 * p-value at max_attempts 200 for statistics from 0.5 to 3.3, and Barnard's p-values.
 */
t.test('the sequential p-value at max_attempts 200 is the term-by-term one, to the last bit', async (t) => {
  const before: Array<[number, number]> = [
    [0.5, 0.7173798333609505],
    [1, 0.404434751213161],
    [1.7, 0.11719218622781064],
    [2.3, 0.028300156774499673],
    [2.9, 0.004879307015977769],
    [3.3, 0.0012489134135256178],
  ];
  for (const [statistic, p] of before) t.equal(crossingProbability(statistic, 5, 200), p, `z/g reached ${statistic}`);
});

t.test("Barnard's p-values are the term-by-term ones, to the last bit", async (t) => {
  const before: Array<[number, number, number, number, number]> = [
    [5, 5, 5, 0, 0.0009765624999999998],
    [20, 18, 20, 12, 0.01928510924699375],
    [60, 55, 60, 40, 0.00035942899511966046],
    [13, 9, 17, 4, 0.007466292355447089],
  ];
  for (const [nB, x, nC, y, p] of before) t.equal(barnardPValue(nB, x, nC, y), p, `${x}/${nB} against ${y}/${nC}`);
});
