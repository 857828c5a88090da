// ONNX Runtime's side of bench/compare: loads one model once, warms up, times N runs on the same
// inputs and writes JSON: median/min ms of the timed runs, the process's peak resident memory,
// and whether the outputs match the data set's references.
//   node ort_bench.js --ort-dir DIR --model M.onnx --input NAME=FILE.pb... [--warmup W]
//        [--iters N] [--threads T] [--expected DATA_SET_DIR] --json OUT
// Session: CPU execution provider, graphOptimizationLevel 'all', intraOpNumThreads T,
// interOpNumThreads 1, sequential execution.
'use strict';
const fs = require('fs');
const path = require('path');
const {readTensor} = require('./pb.js');

function parseArgs(argv) {
  const args = {input: [], warmup: 4, iters: 20, threads: 1};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, ''), value = argv[i + 1];
    if (value === undefined) throw new Error(`ort_bench: ${argv[i]} needs a value`);
    if (key === 'input') args.input.push(value);
    else if (['warmup', 'iters', 'threads'].includes(key)) args[key] = Number(value);
    else if (['ort-dir', 'model', 'expected', 'json'].includes(key)) args[key] = value;
    else throw new Error(`ort_bench: unknown option ${argv[i]}`);
  }
  for (const need of ['ort-dir', 'model', 'json'])
    if (!args[need]) throw new Error(`ort_bench: --${need} is required`);
  return args;
}

// Outputs against the data set's output_<j>.pb (by name, else by position): 'ok' or what differs.
// Tolerances as `sgraph check`'s defaults: |got - want| <= 1e-4 + 1e-3 |want|.
function checkOutputs(session, results, dir) {
  const files = fs.readdirSync(dir).filter((f) => /^output_\d+\.pb$/.test(f))
      .sort((a, b) => parseInt(a.slice(7)) - parseInt(b.slice(7)));
  if (files.length === 0) return 'no references';
  for (let j = 0; j < files.length; ++j) {
    const want = readTensor(path.join(dir, files[j]));
    const name = want.name && results[want.name] ? want.name : session.outputNames[j];
    const got = results[name];
    if (!got) return `no output '${name}'`;
    if (got.dims.join('x') !== want.dims.join('x'))
      return `${name}: shape [${got.dims}] vs reference [${want.dims}]`;
    for (let i = 0; i < want.data.length; ++i) {
      const g = Number(got.data[i]), w = Number(want.data[i]);
      if (Number.isNaN(g) && Number.isNaN(w)) continue;
      if (!(Math.abs(g - w) <= 1e-4 + 1e-3 * Math.abs(w)))
        return `${name}[${i}]: ${g} vs reference ${w}`;
    }
  }
  return 'ok';
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = require(path.resolve(args['ort-dir'], 'node_modules', 'onnxruntime-node'));
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const feeds = {};
  for (const spec of args.input) {
    const eq = spec.indexOf('=');
    const t = readTensor(spec.slice(eq + 1));
    feeds[spec.slice(0, eq)] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const ms = [];
  let results;
  for (let k = 0; k < args.warmup + args.iters; ++k) {
    const start = process.hrtime.bigint();
    results = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const timed = ms.slice(args.warmup).sort((a, b) => a - b);
  const out = {
    timed_runs: timed.length,
    first_ms: ms[0],
    median_ms: timed[timed.length >> 1],
    min_ms: timed[0],
    max_rss_kb: process.resourceUsage().maxRSS,
    check: args.expected ? checkOutputs(session, results, args.expected) : 'not checked',
    version: ort.env.versions ? ort.env.versions.common : '',
  };
  fs.writeFileSync(args.json, JSON.stringify(out) + '\n');
}

main().catch((e) => {
  console.error(`ort_bench: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
