// Shared by the golden makers (make_tokenizer_goldens.mjs, make_pair_goldens.mjs): where the
// repository and the pinned tokenizer are, and one seeded PRNG so each file is the same on
// every run.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const tokPath = path.join(root, 'assets/tokenizer/roberta-base/tokenizer.json');

// mulberry32: a small seeded PRNG returning floats in [0, 1).
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
