// ONNX Runtime (CPU) runner for bench/embed_side_by_side.py: times one fixed, padded batch of
// token ids through an embedding model exported by that script (inputs input_ids and
// attention_mask, int64 [batch, seq]; output "embedding" float32 [batch, hidden]: mean pooling).
//
//   node bench/ort/bench_ort_embed.mjs --model embed.onnx --inputs ids.json --threads 2 \
//        [--iters 20] [--warmup 3]
//
// ids.json: {"input_ids": [[...], ...], "attention_mask": [[...], ...]}. Session options as
// bench_ort.mjs (intraOp --threads, interOp 1, sequential, graph optimization "all"). Prints ONE
// JSON line: {"engine","batch","seq","threads","iters","ms_median","ms_p10","ms_p90",
// "embedding": [[...], ...]} (the embeddings, for the driver's agreement check).
import * as fs from 'node:fs';
import ort from 'onnxruntime-node';

function parseArgs(argv) {
  const a = { iters: 20, warmup: 3, threads: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    a[argv[i].slice(2)] = argv[i + 1];
  }
  if (!a.model || !a.inputs) throw new Error('--model and --inputs are required');
  return a;
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const threads = Number(a.threads), iters = Number(a.iters), warmup = Number(a.warmup);
  const session = await ort.InferenceSession.create(a.model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const c = JSON.parse(fs.readFileSync(a.inputs, 'utf8'));
  const B = c.input_ids.length, T = c.input_ids[0].length;
  const feeds = {
    input_ids: new ort.Tensor('int64', new BigInt64Array(c.input_ids.flat().map(BigInt)), [B, T]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(c.attention_mask.flat().map(BigInt)), [B, T]),
  };
  let out;
  for (let i = 0; i < warmup; i++) out = await session.run(feeds);
  const times = [];
  for (let i = 0; i < iters; i++) {
    const t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((x, y) => x - y);
  const H = out.embedding.dims[1], data = Array.from(out.embedding.data);
  const embedding = [];
  for (let b = 0; b < B; b++) embedding.push(data.slice(b * H, (b + 1) * H));
  console.log(JSON.stringify({
    engine: `onnxruntime-${ort.env.versions.node || ort.env.versions.common}`, batch: B, seq: T, threads, iters,
    ms_median: quantile(times, 0.5), ms_p10: quantile(times, 0.1), ms_p90: quantile(times, 0.9), embedding,
  }));
}

main().catch((e) => { console.error(e); process.exit(1); });
