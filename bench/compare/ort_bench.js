// ONNX Runtime's side of bench/compare: loads one model once, warms up, times N runs on the same
// inputs and writes JSON: median/min ms of the timed runs, the process's peak resident memory,
// and whether the outputs match the data set's references.
//   node ort_bench.js --ort-dir DIR --model M.onnx --input NAME=FILE.pb... [--warmup W]
//        [--iters N] [--threads T] [--expected DATA_SET_DIR]... --json OUT
// An input given C times makes a cycle of C input sets, as `sgraph run` does (run k uses set
// k mod C; every input given once or C times, and --expected once per set): the timed runs are
// then whole cycles, median/min are over each cycle's mean run time, cycle_set_median_ms gives
// each set's median, and every set's last outputs are checked against its --expected.
// Session: CPU execution provider, graphOptimizationLevel 'all', intraOpNumThreads T,
// interOpNumThreads 1, sequential execution.
'use strict';
const fs = require('fs');
const path = require('path');
const {readTensor} = require('./pb.js');

function parseArgs(argv) {
  const args = {input: [], expected: [], warmup: 4, iters: 20, threads: 1};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, ''), value = argv[i + 1];
    if (value === undefined) throw new Error(`ort_bench: ${argv[i]} needs a value`);
    if (key === 'input' || key === 'expected') args[key].push(value);
    else if (['warmup', 'iters', 'threads'].includes(key)) args[key] = Number(value);
    else if (['ort-dir', 'model', 'json'].includes(key)) args[key] = value;
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
  // feeds[c]: the c-th input set; an input given once is the same in every set.
  const specs = {};
  for (const spec of args.input) {
    const eq = spec.indexOf('=');
    (specs[spec.slice(0, eq)] = specs[spec.slice(0, eq)] || []).push(spec.slice(eq + 1));
  }
  const cycle = Math.max(1, ...Object.values(specs).map((files) => files.length));
  const feeds = Array.from({length: cycle}, () => ({}));
  for (const [name, files] of Object.entries(specs)) {
    if (files.length !== 1 && files.length !== cycle)
      throw new Error(`input '${name}' is given ${files.length} times, another ${cycle} times`);
    const tensors = files.map((file) => {
      const t = readTensor(file);
      return new ort.Tensor(t.type, t.data, t.dims);
    });
    for (let c = 0; c < cycle; ++c) feeds[c][name] = tensors[files.length === 1 ? 0 : c];
  }
  if (args.expected.length > 1 && args.expected.length !== cycle)
    throw new Error(`--expected given ${args.expected.length} times for ${cycle} input sets`);
  const warmup = cycle > 1 ? Math.ceil(args.warmup / cycle) * cycle : args.warmup;
  const iters = Math.ceil(args.iters / cycle) * cycle;
  const ms = [], results = [];
  for (let k = 0; k < warmup + iters; ++k) {
    const start = process.hrtime.bigint();
    results[k % cycle] = await session.run(feeds[k % cycle]);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  // The timed figures: single runs, or with a cycle each whole cycle's mean run time.
  const runs = ms.slice(warmup), timed = [];
  for (let k = 0; k < runs.length; k += cycle)
    timed.push(runs.slice(k, k + cycle).reduce((a, b) => a + b, 0) / cycle);
  timed.sort((a, b) => a - b);
  const check = args.expected.length === 0 ? 'not checked' :
      args.expected.map((dir, c) => checkOutputs(session, results[c], dir))
          .find((r) => r !== 'ok') || 'ok';
  const out = {
    timed_runs: runs.length,
    first_ms: ms[0],
    median_ms: timed[timed.length >> 1],
    min_ms: timed[0],
    max_rss_kb: process.resourceUsage().maxRSS,
    check,
    version: ort.env.versions ? ort.env.versions.common : '',
  };
  if (cycle > 1) {
    out.cycle = cycle;
    out.cycle_set_median_ms = Array.from({length: cycle}, (_, c) => {
      const mine = runs.filter((_, k) => k % cycle === c).sort((a, b) => a - b);
      return mine[mine.length >> 1];
    });
  }
  fs.writeFileSync(args.json, JSON.stringify(out) + '\n');
}

main().catch((e) => {
  console.error(`ort_bench: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
