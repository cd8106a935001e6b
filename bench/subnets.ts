// bench/subnets: how the subnet pool's pick (src/core/subnets.ts, ADR 0007) grows with the networks in use:
// the time of one pick with 1000 networks claimed, against 10, in the same run, and their ratio. It was a
// timed unit test ("under 100 ms"); timings belong here (ADR 0027).
// Run: npm run build && node dist/bench/subnets.js [rounds, default 200]
import { type Cidr, formatCidr, parseCidr, pickSubnet } from "../src/core/subnets.js";

const cidr = (text: string): Cidr => {
  const c = parseCidr(text);
  if (typeof c === "string") throw new Error(c);
  return c;
};

const ROUNDS = Number(process.argv[2] ?? 200);
const pool = cidr("10.210.0.0/16");
const claimedOf = (n: number) =>
  Array.from({ length: n }, (_, i) => formatCidr({ base: pool.base + i * 64, prefix: 26 }));

function medianMs(n: number): number {
  const claimed = claimedOf(n);
  const foreign = [cidr("172.17.0.0/16")];
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    pickSubnet(pool, 26, claimed, foreign);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? 0;
}

const small = medianMs(10);
const big = medianMs(1000);
console.log(`pick with 10 networks: ${small.toFixed(3)} ms (median of ${ROUNDS})`);
console.log(`pick with 1000 networks: ${big.toFixed(3)} ms`);
console.log(`ratio 1000/10: ${(big / Math.max(small, 1e-6)).toFixed(1)}x`);
