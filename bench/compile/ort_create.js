// ONNX Runtime's session set-up time, for bench/compile/run.sh: creates a session for each model
// (CPU, graph optimizations 'all', 1 intra-op thread) once to load the library, then 3 more
// times, and prints "<model> <median ms>" per model.
//   node ort_create.js ORT_DIR MODEL.onnx...
'use strict';
const path = require('path');

async function main() {
  const [ortDir, ...models] = process.argv.slice(2);
  const ort = require(path.resolve(ortDir, 'node_modules', 'onnxruntime-node'));
  const options = {graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1};
  for (const model of models) {
    await ort.InferenceSession.create(model, options);
    const ms = [];
    for (let i = 0; i < 3; ++i) {
      const start = process.hrtime.bigint();
      await ort.InferenceSession.create(model, options);
      ms.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    ms.sort((a, b) => a - b);
    console.log(`${model} ${ms[1].toFixed(1)}`);
  }
}
main().catch((e) => {
  console.error(`ort_create: ${e.message}`);
  process.exit(1);
});
