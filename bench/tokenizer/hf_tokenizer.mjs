// Single-thread encode throughput of Hugging Face's Rust tokenizers (npm
// @anush008/tokenizers 0.6.0 = tokenizers 0.22.x, N-API bindings), the counterpart of
// bench_tokenizer.cpp. Run with RAYON_NUM_THREADS=1 so encodeBatch uses one thread
// (compare.sh does). Only encodeBatch is timed; tokens are counted afterwards.
//
//   RAYON_NUM_THREADS=1 node hf_tokenizer.mjs --tokenizer DIR --texts FILE [--passes N]
//
// Prints one JSON line per timed pass, same fields as bench_tokenizer; pass 0 is "cold"
// (fresh tokenizer, empty BPE cache). "busy": the process got < 90% of a core.
import { Tokenizer } from '@anush008/tokenizers';
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const dir = opt('--tokenizer'), textsFile = opt('--texts');
const passes = Number(opt('--passes', '5'));
if (!dir || !textsFile) {
  console.error('usage: node hf_tokenizer.mjs --tokenizer DIR --texts FILE [--passes N]');
  process.exit(2);
}
const raw = fs.readFileSync(textsFile);
let lines = raw.toString('utf8').split('\n');
if (lines.length && lines[lines.length - 1] === '') lines.pop();  // as std::getline
const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l), 0);
const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));

for (let p = 0; p < passes; ++p) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const encs = await tok.encodeBatch(lines);
  const wall = Number(process.hrtime.bigint() - t0) * 1e-9;
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) * 1e-6;
  let tokens = 0;
  for (const e of encs) tokens += e.getLength();
  console.log(JSON.stringify({
    impl: 'hf', pass: p, cold: p === 0, busy: cpu < 0.9 * wall, texts: lines.length, bytes, tokens,
    seconds: wall, cpu_seconds: cpu, texts_per_s: lines.length / wall, tokens_per_s: tokens / wall,
    mb_per_s: bytes / wall / 1e6,
  }));
}
