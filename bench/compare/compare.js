// bench/compare's driver (run.sh starts it): for each model and each distinct input shape of its
// data sets, runs `sgraph run ... --bench-json` and ort_bench.js in alternating processes
// (sgraph, ORT, sgraph, ORT, ...) with the same thread count, then prints a Markdown table of
// medians, their ratio, and each process's peak resident memory against its runtime's baseline.
//   node compare.js --sgraph BIN --ort-dir DIR --work DIR --models DIR... [--threads N]
//        [--rounds R] [--target-ms T] [--only SUBSTRING] [--quick] [--cycle]
// --cycle: one row per model with several input shapes, each process serving all of them in turn
// (data sets in order, one of each shape, cycling), the steady state of a service whose inputs
// vary; the times are per run, averaged over whole cycles.
'use strict';
const fs = require('fs');
const path = require('path');
const {spawnSync} = require('child_process');
const {readTensor, modelInputNames} = require('./pb.js');

const SGRAPH_WARMUP = 3;  // `sgraph run`'s default warm-up; its first served run is untimed too

// The first timed run, as `sgraph run` counts it: after the warm-up and the first served run, or
// with a cycle of C input sets, after the warm-up rounded up to whole cycles and 5 more cycles
// (SessionOptions::max_guard_misses + 1: time for a region to re-plan for a shape the warm-up
// did not see).
const timedFrom = (cycle) =>
  cycle > 1 ? Math.ceil(SGRAPH_WARMUP / cycle) * cycle + 5 * cycle : SGRAPH_WARMUP + 1;

function parseArgs(argv) {
  const args = {models: [], threads: 1, rounds: 5, 'target-ms': 400, only: '', quick: false,
    cycle: false};
  for (let i = 0; i < argv.length; ++i) {
    const key = argv[i].replace(/^--/, '');
    if (key === 'quick' || key === 'cycle') {
      args[key] = true;
      continue;
    }
    const value = argv[++i];
    if (value === undefined) throw new Error(`compare: ${argv[i - 1]} needs a value`);
    if (key === 'models') args.models.push(value);
    else if (['threads', 'rounds', 'target-ms'].includes(key)) args[key] = Number(value);
    else if (['sgraph', 'ort-dir', 'work', 'only'].includes(key)) args[key] = value;
    else throw new Error(`compare: unknown option --${key}`);
  }
  if (args.quick) Object.assign(args, {rounds: 1, 'target-ms': 50});
  return args;
}

// One row per model folder and distinct input-shape signature (first data set of each shape), or
// with `cycle` one row per model folder with several signatures, holding one data set of each.
function findRows(dirs, only, cycle) {
  const rows = [];
  for (const dir of dirs) {
    const model = path.join(dir, 'model.onnx');
    if (!fs.existsSync(model)) continue;
    const names = modelInputNames(model);
    const sets = fs.readdirSync(dir).filter((d) => /^test_data_set_\d+$/.test(d))
        .sort((a, b) => parseInt(a.slice(14)) - parseInt(b.slice(14)));
    const seen = new Set(), found = [];
    for (const set of sets) {
      const inputs = fs.readdirSync(path.join(dir, set)).filter((f) => /^input_\d+\.pb$/.test(f))
          .sort((a, b) => parseInt(a.slice(6)) - parseInt(b.slice(6)))
          .map((f, i) => {
            const file = path.join(dir, set, f), t = readTensor(file);
            return {name: t.name || names[i], file, dims: t.dims};
          });
      const shape = inputs.map((t) => (t.dims.length ? t.dims.join('x') : '()')).join(', ');
      if (seen.has(shape)) continue;
      seen.add(shape);
      found.push({set: path.join(dir, set), inputs, shape});
    }
    const name = path.basename(dir);
    if (!name.includes(only)) continue;
    if (!cycle) for (const f of found) rows.push({model: name, dir, sets: [f], shape: f.shape});
    else if (found.length > 1)
      rows.push({model: name, dir, sets: found, shape: found.map((f) => f.shape).join(' → ')});
  }
  return rows;
}

// Runs a command; returns its JSON output file parsed, or throws with the command's stderr.
function runJson(cmd, argv, jsonFile) {
  fs.rmSync(jsonFile, {force: true});
  const r = spawnSync(cmd, argv, {encoding: 'utf8', timeout: 900e3, maxBuffer: 64 << 20});
  if (r.error) throw new Error(`${path.basename(cmd)}: ${r.error.message}`);
  if (r.status !== 0 || !fs.existsSync(jsonFile)) {
    const why = (r.stderr || '').trim().split('\n').slice(-3).join(' / ');
    throw new Error(`${path.basename(cmd)} exited with ${r.status}: ${why}`);
  }
  return JSON.parse(fs.readFileSync(jsonFile, 'utf8'));
}

function makeRunners(args, sgraphThreads) {
  const sgJson = path.join(args.work, 'sgraph.json'), ortJson = path.join(args.work, 'ort.json');
  const ortBench = path.join(__dirname, 'ort_bench.js');
  return {
    sgraph(row, iters) {
      const argv = ['run', row.dir, '--iters', String(timedFrom(row.sets.length) + iters),
        '--bench-json', sgJson, ...sgraphThreads];
      for (const f of row.sets) for (const t of f.inputs) argv.push('--input', `${t.name}=${t.file}`);
      const j = runJson(args.sgraph, argv, sgJson);
      // ORT is given the same untimed lead: timedFrom must follow sgraph run's.
      if (j.untimed_runs !== timedFrom(row.sets.length))
        throw new Error(`sgraph run timed from run ${j.untimed_runs}, compare.js expected ` +
          `${timedFrom(row.sets.length)}: update timedFrom`);
      return j;
    },
    ort(row, iters) {
      const argv = [ortBench, '--ort-dir', args['ort-dir'], '--model',
        path.join(row.dir, 'model.onnx'), '--warmup', String(timedFrom(row.sets.length)),
        '--iters', String(iters), '--threads', String(args.threads), '--json', ortJson];
      for (const f of row.sets) {
        argv.push('--expected', f.set);
        for (const t of f.inputs) argv.push('--input', `${t.name}=${t.file}`);
      }
      return runJson(process.execPath, argv, ortJson);
    },
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// A short calibration run of each, then `rounds` alternating pairs with enough iterations that
// each process's timed loop lasts about target-ms.
function measure(row, run, args) {
  const probe = [run.sgraph(row, 5), run.ort(row, 5)];
  const iters = probe.map((p) =>
    Math.max(10, Math.min(20000, Math.ceil(args['target-ms'] / Math.max(p.median_ms, 1e-3)))));
  const sg = [], ort = [];
  for (let r = 0; r < args.rounds; ++r) {
    sg.push(run.sgraph(row, iters[0]));
    ort.push(run.ort(row, iters[1]));
  }
  const summary = (rs) => ({
    median_ms: median(rs.map((x) => x.median_ms)),
    min_ms: Math.min(...rs.map((x) => x.min_ms)),
    round_medians_ms: rs.map((x) => x.median_ms),
    max_rss_kb: Math.max(...rs.map((x) => x.max_rss_kb)),
    iters: rs[0].timed_runs,
    ...(rs[0].cycle ? {cycle_set_median_ms: rs[0].cycle_set_median_ms.map((_, c) =>
      median(rs.map((x) => x.cycle_set_median_ms[c])))} : {}),
  });
  const last = sg[sg.length - 1];
  return {sgraph: {...summary(sg), ops: last.ops, ops_compiled: last.ops_compiled,
    compile_ms: last.compile_ms, last_run_ms: last.last_run_ms,
    interpreted_ms_by_op: last.last_run_interpreted_ms_by_op},
  ort: {...summary(ort), check: ort[ort.length - 1].check}};
}

// sgraph's check of one model folder: every data set against its references.
function sgraphCheck(args, dir) {
  const r = spawnSync(args.sgraph, ['check', dir], {encoding: 'utf8', timeout: 900e3});
  return r.status === 0 ? 'ok' : 'FAIL';
}

// "MatMul 93%, Conv 4%": where the last served run's interpreted time went.
function dominantOps(s) {
  const total = s.last_run_ms;
  return Object.entries(s.interpreted_ms_by_op || {}).sort((a, b) => b[1] - a[1])
      .filter(([, ms]) => ms / total >= 0.05).slice(0, 3)
      .map(([op, ms]) => `${op} ${Math.round((100 * ms) / total)}%`).join(', ') || '-';
}

const mb = (kb) => (kb / 1024).toFixed(1);
const signedMb = (kb) => (kb < 0 ? '-' : '+') + mb(Math.abs(kb));
const fmtMs = (ms) => (ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) :
                       ms >= 0.01 ? ms.toFixed(3) : ms.toFixed(4));

function main() {
  const args = parseArgs(process.argv.slice(2));
  fs.mkdirSync(args.work, {recursive: true});
  const help = spawnSync(args.sgraph, ['help'], {encoding: 'utf8'}).stdout || '';
  const hasThreads = /--threads/.test(help);
  if (!hasThreads && args.threads !== 1)
    throw new Error(`--threads ${args.threads}: this sgraph has no --threads option (it runs ` +
                    'on one thread); compare with --threads 1');
  const run = makeRunners(args, hasThreads ? ['--threads', String(args.threads)] : []);
  const baselineDir = args.models.find((d) => path.basename(d) === 'trivial');
  if (!baselineDir) throw new Error('no model folder named trivial among --models (the baseline)');
  const baseline = measure(findRows([baselineDir], '', false)[0], run, {...args, rounds: 1});
  const rows = findRows(args.models.filter((d) => d !== baselineDir), args.only, args.cycle);
  console.log(`# sgraph vs ONNX Runtime ${process.env.ORT_VERSION || ''}: ${args.threads} ` +
              `thread(s), ${args.rounds} alternating round(s), ~${args['target-ms']} ms per ` +
              `timed loop${args.cycle ? '; each process cycles through the shapes of a row, ' +
              'times per run averaged over whole cycles' : ''}`);
  console.log(`baseline (trivial 2-op model): sgraph ${mb(baseline.sgraph.max_rss_kb)} MB, ` +
              `${fmtMs(baseline.sgraph.median_ms)} ms/run; ORT (node) ` +
              `${mb(baseline.ort.max_rss_kb)} MB, ${fmtMs(baseline.ort.median_ms)} ms/run\n`);
  console.log('| model | input shape | sgraph ms | ORT ms | sgraph/ORT | of min | ' +
              'sgraph MB (vs base) | ORT MB (vs base) | sgraph compiled ops | ' +
              'sgraph interpreted time | check |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|');
  const results = [], checked = {}, perSet = [];
  let failures = 0;
  for (const row of rows) {
    let line;
    try {
      checked[row.dir] = checked[row.dir] || sgraphCheck(args, row.dir);
      const m = measure(row, run, args), s = m.sgraph, o = m.ort;
      results.push({model: row.model, shape: row.shape, ...m, sgraph_check: checked[row.dir]});
      const ok = checked[row.dir] === 'ok' && o.check === 'ok';
      if (!ok) ++failures;
      line = `| ${row.model} | ${row.shape} | ${fmtMs(s.median_ms)} | ${fmtMs(o.median_ms)} | ` +
          `${(s.median_ms / o.median_ms).toFixed(2)} | ${(s.min_ms / o.min_ms).toFixed(2)} | ` +
          `${mb(s.max_rss_kb)} (${signedMb(s.max_rss_kb - baseline.sgraph.max_rss_kb)}) | ` +
          `${mb(o.max_rss_kb)} (${signedMb(o.max_rss_kb - baseline.ort.max_rss_kb)}) | ` +
          `${s.ops_compiled}/${s.ops} | ${dominantOps(s)} | ` +
          `${ok ? 'ok' : `sgraph ${checked[row.dir]}, ORT ${o.check}`} |`;
    } catch (e) {
      ++failures;
      results.push({model: row.model, shape: row.shape, error: e.message});
      line = `| ${row.model} | ${row.shape} | error: ${e.message} |${' |'.repeat(8)}`;
    }
    console.log(line);
    const done = results[results.length - 1];
    if (args.cycle && done.sgraph)
      perSet.push(`- ${row.model}: ` + row.sets.map((f, c) => {
        const sg = done.sgraph.cycle_set_median_ms[c], ort = done.ort.cycle_set_median_ms[c];
        return `${f.shape} ${fmtMs(sg)} / ${fmtMs(ort)} ms (${(sg / ort).toFixed(2)})`;
      }).join('; '));
  }
  if (perSet.length) console.log(`\nper shape within the cycle, sgraph / ORT median ms (ratio):\n` +
                                 perSet.join('\n'));
  const out = path.join(args.work, 'results.json');
  fs.writeFileSync(out, JSON.stringify({threads: args.threads, rounds: args.rounds, baseline,
    rows: results}, null, 1) + '\n');
  console.log(`\nper-round figures: ${out}`);
  if (failures) {
    console.error(`compare: ${failures} row(s) failed or did not match their references`);
    process.exit(1);
  }
}

try {
  main();
} catch (e) {
  console.error(`compare: ${e.message}`);
  process.exit(1);
}
