// Reads the ONNX protobuf messages bench/compare needs, straight from the wire format (no
// protobuf package): a TensorProto file (the input_<i>.pb / output_<j>.pb of ONNX test folders)
// as dims + a typed array, and the names of a model's graph inputs that are not initializers.
'use strict';
const fs = require('fs');

// The varint at buf[pos]: [value as a BigInt, position after it].
function readVarint(buf, pos) {
  let v = 0n;
  for (let shift = 0n; ; shift += 7n) {
    if (pos >= buf.length || shift > 63n) throw new Error('malformed protobuf varint');
    const b = buf[pos++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [v, pos];
  }
}

// Calls visit(field, wireType, value) for each field of one message in `buf`: value is a BigInt
// for varints, a Buffer view for length-delimited fields and fixed32/fixed64 words.
function forEachField(buf, visit) {
  let pos = 0, v;
  const take = (n) => {
    if (pos + n > buf.length) throw new Error('truncated protobuf message');
    pos += n;
    return buf.subarray(pos - n, pos);
  };
  while (pos < buf.length) {
    [v, pos] = readVarint(buf, pos);
    const field = Number(v >> 3n), wire = Number(v & 7n);
    if (wire === 0) {
      [v, pos] = readVarint(buf, pos);
      visit(field, wire, v);
    } else if (wire === 1) {
      visit(field, wire, take(8));
    } else if (wire === 2) {
      [v, pos] = readVarint(buf, pos);
      visit(field, wire, take(Number(v)));
    } else if (wire === 5) {
      visit(field, wire, take(4));
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
  }
}

// The values of a repeated scalar field, packed (wire type 2) or not: varints (width 0) as
// BigInts, fixed-width words through read(buffer, offset).
function scalars(wire, value, width, read) {
  if (wire !== 2) return [wire === 0 ? value : read(value, 0)];
  const out = [];
  if (width === 0) {
    for (let pos = 0, v; pos < value.length;) {
      [v, pos] = readVarint(value, pos);
      out.push(v);
    }
  } else {
    for (let i = 0; i + width <= value.length; i += width) out.push(read(value, i));
  }
  return out;
}

// ONNX TensorProto.DataType -> ONNX Runtime's tensor type name and typed-array constructor.
const DTYPES = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array],
  4: ['uint16', Uint16Array], 5: ['int16', Int16Array], 6: ['int32', Int32Array],
  7: ['int64', BigInt64Array], 9: ['bool', Uint8Array], 10: ['float16', Uint16Array],
  11: ['float64', Float64Array], 12: ['uint32', Uint32Array], 13: ['uint64', BigUint64Array],
};

const readF32 = (b, i) => b.readFloatLE(i);
const readF64 = (b, i) => b.readDoubleLE(i);

// A serialized TensorProto -> {name, type (ONNX Runtime's name), dims, data (typed array)}.
function readTensor(file) {
  const buf = fs.readFileSync(file);
  const t = {name: '', dims: [], dataType: 0, raw: null, values: []};
  forEachField(buf, (field, wire, value) => {
    if (field === 1) t.dims.push(...scalars(wire, value, 0).map(Number));
    else if (field === 2) t.dataType = Number(value);
    else if (field === 4) t.values.push(...scalars(wire, value, 4, readF32));
    else if (field === 5 || field === 7 || field === 11) t.values.push(...scalars(wire, value, 0));
    else if (field === 8) t.name = value.toString('utf8');
    else if (field === 9) t.raw = value;
    else if (field === 10) t.values.push(...scalars(wire, value, 8, readF64));
    else if (field === 13 || field === 14) throw new Error(`${file}: external data is not supported`);
  });
  const entry = DTYPES[t.dataType];
  if (!entry) throw new Error(`${file}: unsupported TensorProto data_type ${t.dataType}`);
  const [type, Ctor] = entry;
  const count = t.dims.reduce((a, b) => a * b, 1);
  let data;
  if (t.raw) {
    if (t.raw.length !== count * Ctor.BYTES_PER_ELEMENT)
      throw new Error(`${file}: raw_data has ${t.raw.length} bytes, dims [${t.dims}] want ` +
                      `${count * Ctor.BYTES_PER_ELEMENT}`);
    data = new Ctor(new Uint8Array(t.raw).buffer);  // a copy, so the array is aligned
  } else {
    if (t.values.length !== count)
      throw new Error(`${file}: ${t.values.length} values, dims [${t.dims}] want ${count}`);
    const big = Ctor === BigInt64Array || Ctor === BigUint64Array;
    data = Ctor.from(t.values, (v) => (big ? BigInt(v) : Number(v)));
  }
  return {name: t.name, type, dims: t.dims, data};
}

// The graph inputs of an ONNX model that are not initializers, in order.
function modelInputNames(file) {
  let graph = null;
  forEachField(fs.readFileSync(file), (field, wire, value) => {
    if (field === 7 && wire === 2) graph = value;
  });
  if (!graph) throw new Error(`${file}: no graph in the model`);
  const inputs = [], initializers = new Set();
  const nameOf = (msg, nameField) => {
    let name = '';
    forEachField(msg, (f, w, v) => {
      if (f === nameField && w === 2) name = v.toString('utf8');
    });
    return name;
  };
  forEachField(graph, (field, wire, value) => {
    if (field === 11 && wire === 2) inputs.push(nameOf(value, 1));
    else if (field === 5 && wire === 2) initializers.add(nameOf(value, 8));
  });
  return inputs.filter((n) => !initializers.has(n));
}

module.exports = {readTensor, modelInputNames};
