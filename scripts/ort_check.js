// Runs ONNX Runtime (onnxruntime-node, CPU) on one model over the data sets of a folder in the
// ONNX test layout and compares with the references: DATADIR/test_data_set_<k>/input_<i>.pb are
// the inputs in the order of the model's inputs, output_<j>.pb the expected outputs in the order
// of its outputs. Floats match when |got - want| <= atol + rtol * |want| (NaN matches NaN),
// integers and booleans exactly. Prints a line per data set; exits 1 on any mismatch or error.
//   ORT_DIR=build/ort node scripts/ort_check.js MODEL.onnx DATADIR [--rtol R] [--atol A]
// ORT_OPT: ONNX Runtime's graph optimization level (default 'disabled', as the references of
// ../shared/testdata/real were made).
'use strict';
const fs = require('fs');
const path = require('path');
const {readTensor} = require('../bench/compare/pb.js');

const args = process.argv.slice(2);
let rtol = 1e-3, atol = 1e-4;
const positional = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--rtol' || args[i] === '--atol') {
    const v = Number(args[i + 1]);
    if (!(v >= 0)) throw new Error(`${args[i]} wants a non-negative number`);
    if (args[i] === '--rtol') rtol = v; else atol = v;
    ++i;
  } else {
    positional.push(args[i]);
  }
}
if (positional.length !== 2) {
  console.error('usage: node scripts/ort_check.js MODEL.onnx DATADIR [--rtol R] [--atol A]');
  process.exit(2);
}
const [model, dataDir] = positional;
const ortDir = path.resolve(process.env.ORT_DIR || path.join(__dirname, '..', 'build', 'ort'));
const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));

// The worst element of got against want: {ok, maxAbs, why}.
function compare(got, want) {
  if (got.type !== want.type) return {ok: false, maxAbs: NaN, why: `dtype ${got.type}, want ${want.type}`};
  const gd = got.dims.join('x'), wd = want.dims.join('x');
  if (gd !== wd) return {ok: false, maxAbs: NaN, why: `shape [${gd}], want [${wd}]`};
  const isFloat = want.type === 'float32' || want.type === 'float64';
  let ok = true, maxAbs = 0, why = '';
  for (let i = 0; i < want.data.length; ++i) {
    const g = got.data[i], w = want.data[i];
    if (!isFloat) {
      if (g !== w) {
        if (ok) why = `element ${i}: ${g}, want ${w}`;
        ok = false;
      }
      continue;
    }
    if (Number.isNaN(w) || Number.isNaN(g)) {
      if (Number.isNaN(w) !== Number.isNaN(g)) {
        if (ok) why = `element ${i}: ${g}, want ${w}`;
        ok = false;
      }
      continue;
    }
    const d = g === w ? 0 : Math.abs(g - w);
    if (d > maxAbs) maxAbs = d;
    if (!(d <= atol + rtol * Math.abs(w))) {
      if (ok) why = `element ${i}: ${g}, want ${w}`;
      ok = false;
    }
  }
  return {ok, maxAbs, why};
}

(async () => {
  const sets = fs.readdirSync(dataDir)
      .filter((d) => /^test_data_set_\d+$/.test(d))
      .sort((a, b) => Number(a.slice(14)) - Number(b.slice(14)));
  if (!sets.length) throw new Error(`${dataDir}: no test_data_set_<k> folders`);
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: process.env.ORT_OPT || 'disabled',
    executionProviders: ['cpu'],
  });
  let failed = 0;
  for (const set of sets) {
    const dir = path.join(dataDir, set);
    const numbered = (prefix) => fs.readdirSync(dir)
        .filter((f) => new RegExp(`^${prefix}_\\d+\\.pb$`).test(f))
        .sort((a, b) => Number(a.match(/\d+/)[0]) - Number(b.match(/\d+/)[0]));
    try {
      const inputs = numbered('input'), outputs = numbered('output');
      if (inputs.length !== session.inputNames.length)
        throw new Error(`${inputs.length} input files, the model has ${session.inputNames.length} inputs`);
      const feeds = {};
      inputs.forEach((f, i) => {
        const t = readTensor(path.join(dir, f));
        feeds[session.inputNames[i]] = new ort.Tensor(t.type, t.data, t.dims);
      });
      const res = await session.run(feeds);
      let maxAbs = 0, bad = '';
      outputs.forEach((f, j) => {
        const want = readTensor(path.join(dir, f));
        const r = res[session.outputNames[j]];
        const c = compare({type: r.type, dims: r.dims, data: r.data}, want);
        if (c.maxAbs > maxAbs) maxAbs = c.maxAbs;
        if (!c.ok && !bad) bad = `output ${j} '${session.outputNames[j]}': ${c.why}`;
      });
      if (bad) ++failed;
      console.log(`${set}  ${bad ? 'MISMATCH' : 'ok'}  max_abs ${maxAbs.toExponential(2)}` +
                  `  (${outputs.length} outputs)${bad ? '  ' + bad : ''}`);
    } catch (e) {
      ++failed;
      console.log(`${set}  ERROR  ${e && e.message || e}`);
    }
  }
  console.log(`${model}: ${sets.length - failed} of ${sets.length} data sets match ` +
              `(rtol ${rtol}, atol ${atol}, onnxruntime-node ${ort.env.versions ? ort.env.versions.common : ''})`);
  process.exit(failed ? 1 : 0);
})().catch((e) => {
  console.error(`ort_check: ${e && e.message || e}`);
  process.exit(1);
});
