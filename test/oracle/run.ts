import { runOccurrenceOracle } from "./occurrences.js"
import type { OracleReport } from "./common.js"
import { runPeriodOracle } from "./periods.js"

/*
 * `npm run test:oracle`: the recurrence and period oracle at full size. ORACLE_CASES (default 1,000,000)
 * cases are split between the occurrence half (test/oracle/occurrences.ts) and the period
 * half; ORACLE_SEED picks the run (default 1); ORACLE_ONLY=periods or =occurrences runs one
 * half with all the cases. Ends with `N cases, M divergences`; exits 1 on any divergence.
 */

type Oracle = (cases: number, seed: number) => OracleReport

const cases = Number(process.env.ORACLE_CASES ?? 1_000_000)
const seed = Number(process.env.ORACLE_SEED ?? 1)
const only = process.env.ORACLE_ONLY

if (!Number.isInteger(cases) || cases < 0 || !Number.isInteger(seed)) {
  console.error("ORACLE_CASES must be a whole number of cases and ORACLE_SEED an integer")
  process.exit(2)
}
if (only !== undefined && only !== "periods" && only !== "occurrences") {
  console.error("ORACLE_ONLY is periods or occurrences")
  process.exit(2)
}

const halves: ReadonlyArray<readonly [string, Oracle, number]> = only === "periods"
  ? [["periods", runPeriodOracle, cases]]
  : only === "occurrences"
  ? [["occurrences", runOccurrenceOracle, cases]]
  : [["occurrences", runOccurrenceOracle, Math.ceil(cases / 2)], ["periods", runPeriodOracle, Math.floor(cases / 2)]]

let total = 0
let divergences = 0
const examples: Array<string> = []
for (const [name, oracle, n] of halves) {
  const started = Date.now()
  const report = oracle(n, seed)
  total += report.cases
  divergences += report.divergences
  for (const example of report.examples) if (examples.length < 20) examples.push(`${name}: ${example}`)
  console.log(`${name}: ${report.cases} cases, ${report.divergences} divergences in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}
for (const example of examples) console.log(example)
console.log(`${total} cases, ${divergences} divergences`)
process.exitCode = divergences > 0 ? 1 : 0
