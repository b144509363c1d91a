// ONNX Runtime (CPU, npm onnxruntime-node) inference runner for the side-by-side benchmarks.
//
//   node bench/ort/bench_ort.mjs --model model.onnx --batch-size 1 --seq-len 32 --threads 2 \
//        [--iters 20] [--warmup 3] [--check] [--busy-threshold 0.3]
//
// model.onnx comes from bench/ort/export_onnx.py. Session: intraOpNumThreads = --threads,
// interOpNumThreads 1, sequential execution, graph optimization "all". Inputs are random ids
// of exactly --seq-len tokens (<s> ... </s>, no padding), attention_mask all ones.
// --batch-size and --seq-len take comma lists; each combination prints ONE JSON line:
//   {"engine":"onnxruntime-1.30.0","mode":"infer","precision":"fp32","batch":..,"seq":..,
//    "threads":..,"iters":..,"ms_median":..,"ms_p10":..,"ms_p90":..,"seq_per_s":..,"tok_per_s":..,
//    "busy_retries":..,"others_cores":..}
// Busy guard (the machine is shared): timing runs in blocks of >= 0.25 s; a block during which
// OTHER processes used more than --busy-threshold cores on average (/proc/stat minus this
// process's own CPU time) is discarded and repeated, at most 10 times per measurement.
// "others_cores" reports the average load of other processes over the kept blocks.
// --check: runs OUT.check.json (written by export_onnx.py: a padded batch and the reference's
// logits) and prints {"check":"ok"|"FAIL","max_abs_diff":..}; exits 1 above 1e-4.
// Install once: `npm install` in bench/ort/ (package.json pins onnxruntime-node).
import * as fs from 'node:fs';
import * as os from 'node:os';
import ort from 'onnxruntime-node';

function parseArgs(argv) {
  const a = { iters: 20, warmup: 3, threads: 1, 'busy-threshold': 0.3 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (!k.startsWith('--')) throw new Error(`unexpected argument ${k}`);
    const name = k.slice(2);
    if (name === 'check') { a.check = true; continue; }
    if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
    a[name] = argv[++i];
  }
  if (!a.model) throw new Error('--model model.onnx is required');
  return a;
}

function busyJiffies() {
  // first line of /proc/stat: cpu user nice system idle iowait irq softirq steal ...
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + (f[4] || 0);
  return f.slice(0, 8).reduce((s, x) => s + x, 0) - idle;
}

const CLK_TCK = 100; // Linux USER_HZ
function cpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function randomIds(batch, seq, rng) {
  const ids = new BigInt64Array(batch * seq);
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < seq; t++) {
      let v = 3 + Math.floor(rng() * (50265 - 3));
      if (t === 0) v = 0;
      else if (t === seq - 1) v = 2;
      ids[b * seq + t] = BigInt(v);
    }
  }
  return ids;
}

function mulberry32(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function check(session, modelPath) {
  const c = JSON.parse(fs.readFileSync(modelPath + '.check.json', 'utf8'));
  const B = c.input_ids.length, T = c.input_ids[0].length;
  const ids = new BigInt64Array(c.input_ids.flat().map(BigInt));
  const mask = new BigInt64Array(c.attention_mask.flat().map(BigInt));
  const out = await session.run({
    input_ids: new ort.Tensor('int64', ids, [B, T]),
    attention_mask: new ort.Tensor('int64', mask, [B, T]),
  });
  const got = out.logits.data, want = c.logits.flat();
  let maxDiff = 0;
  for (let i = 0; i < want.length; i++) maxDiff = Math.max(maxDiff, Math.abs(got[i] - want[i]));
  const ok = got.length === want.length && maxDiff <= 1e-4;
  console.log(JSON.stringify({ check: ok ? 'ok' : 'FAIL', max_abs_diff: maxDiff, batch: B, seq: T }));
  return ok;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const threads = Number(a.threads), iters = Number(a.iters), warmup = Number(a.warmup);
  const busyThreshold = Number(a['busy-threshold']);
  const session = await ort.InferenceSession.create(a.model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  if (a.check && !(await check(session, a.model))) process.exit(1);
  if (!a['batch-size'] || !a['seq-len']) return;
  const engine = `onnxruntime-${ort.env.versions.node || ort.env.versions.common}`;
  const rng = mulberry32(0);
  for (const batch of String(a['batch-size']).split(',').map(Number)) {
    for (const seq of String(a['seq-len']).split(',').map(Number)) {
      if (!(batch > 0 && seq >= 2)) throw new Error(`need batch >= 1 and seq >= 2, got ${batch}x${seq}`);
      const feeds = {
        input_ids: new ort.Tensor('int64', randomIds(batch, seq, rng), [batch, seq]),
        attention_mask: new ort.Tensor('int64', new BigInt64Array(batch * seq).fill(1n), [batch, seq]),
      };
      let est = 0;
      for (let i = 0; i < warmup; i++) {
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        est = Number(process.hrtime.bigint() - t0) / 1e9;
      }
      // Guard per block of >= ~0.25 s: /proc/stat counts in 10 ms ticks, too coarse per call.
      const block = Math.max(1, Math.ceil(0.25 / Math.max(est, 1e-4)));
      const times = [];
      let retries = 0, othersSum = 0, wallSum = 0;
      while (times.length < iters) {
        const n = Math.min(block, iters - times.length);
        const ts = [];
        const j0 = busyJiffies(), c0 = cpuSeconds(), b0 = process.hrtime.bigint();
        for (let i = 0; i < n; i++) {
          const t0 = process.hrtime.bigint();
          await session.run(feeds);
          ts.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
        const wall = Number(process.hrtime.bigint() - b0) / 1e9;
        const others = Math.max(0, (busyJiffies() - j0) / CLK_TCK - (cpuSeconds() - c0));
        if (others / wall > busyThreshold && retries < 10) { retries++; continue; }
        othersSum += others; wallSum += wall;
        times.push(...ts);
      }
      times.sort((x, y) => x - y);
      const med = quantile(times, 0.5);
      console.log(JSON.stringify({
        engine, mode: 'infer', precision: 'fp32', batch, seq, threads, iters,
        ms_median: +med.toFixed(3), ms_p10: +quantile(times, 0.1).toFixed(3), ms_p90: +quantile(times, 0.9).toFixed(3),
        seq_per_s: +(batch / (med / 1e3)).toFixed(2), tok_per_s: +(batch * seq / (med / 1e3)).toFixed(1),
        busy_retries: retries, others_cores: +(othersSum / wallSum).toFixed(2), host_cpus: os.cpus().length,
      }));
    }
  }
}

main().catch((e) => { console.error(`bench_ort: ${e.message}`); process.exit(2); });
