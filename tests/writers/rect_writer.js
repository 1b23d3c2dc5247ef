'use strict';
// rect_writer.js - an independent writer of Zarr V3 stores on rectangular
// (zarrs, ZEP 0003) and rectilinear (zarr-extensions) chunk grids, and of
// the text zarrfs must show for them. Plain Node.js with its standard
// library only (zlib for gzip): no zarrfs code, no npm packages.
//
// Usage: node rect_writer.js OUT
// Writes OUT/store (a group holding the arrays below) and, per array A,
// OUT/expected/A/values.txt and OUT/expected/A/KEY.txt for every stored
// chunk KEY (its chunk view). Chunks are encoded at their own declared
// shape (a rectilinear chunk that overshoots the array holds junk past
// its end, which must never show). A missing chunk shows the fill value,
// and so does an empty inner chunk of a shard.
// Numbers are chosen so that JavaScript's String() and zarrfs's shortest
// round-trip rendering agree (no exponents, no -0).

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

const ARRAYS = [
  {
    // zarrs' example form: a list of edges along the only dimension
    name: 'i32_1d',
    dtype: 'int32',
    shape: [11],
    grid: { name: 'rectangular', configuration: { chunk_shape: [[3, 1, 4, 3]] } },
    fill: 7,
    gzip: true,
    missing: ['c/1'],
  },
  {
    // rectilinear with runs in both dimensions, uncompressed
    name: 'f64_2d',
    dtype: 'float64',
    shape: [5, 6],
    grid: {
      name: 'rectilinear',
      configuration: { kind: 'inline', chunk_shapes: [[[2, 2], 1], [1, [2, 2], 1]] },
    },
    fill: -2.25,
    gzip: false,
    missing: ['c/1/2', 'c/2/0'],
  },
  {
    // an integer (regular) dimension beside a listed one, gzip
    name: 'grp/i32_2d',
    dtype: 'int32',
    shape: [7, 4],
    grid: { name: 'rectangular', configuration: { chunk_shape: [[4, 3], 3] } },
    fill: -1,
    gzip: true,
    missing: ['c/0/1'],
  },
  {
    // rectilinear overshoot: the last chunk is 4 long, 2 inside
    name: 'overshoot',
    dtype: 'int32',
    shape: [5],
    grid: { name: 'rectilinear', configuration: { kind: 'inline', chunk_shapes: [[3, 4, 4]] } },
    fill: 0,
    gzip: false,
    missing: [],
  },
  {
    // variable-length strings (vlen-utf8, then gzip)
    name: 'str_1d',
    dtype: 'string',
    shape: [6],
    grid: { name: 'rectangular', configuration: { chunk_shape: [[2, 1, 3]] } },
    fill: '',
    gzip: true,
    missing: ['c/1'],
  },
  {
    // shards of different shapes (2 and 4 rows) holding 2x2 inner chunks
    // (bytes, gzip), an index with a CRC-32C at the end; the inner chunk
    // at (1,1) of every shard is left empty (the fill value)
    name: 'sharded',
    dtype: 'int32',
    shape: [6, 4],
    grid: { name: 'rectangular', configuration: { chunk_shape: [[2, 4], 4] } },
    fill: 3,
    gzip: false,
    inner: [2, 2],
    empty: [1, 1],
    missing: [],
  },
];

// CRC-32C (Castagnoli), bitwise.
function crc32c(buf) {
  let c = 0xffffffff;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

// The chunk lengths of one dimension: an integer repeats until the axis is
// covered; a list is taken as is, runs [length, count] expanded, and only
// chunks starting inside the axis kept (a rectilinear list may overshoot).
function lengths(spec, n) {
  const out = [];
  if (typeof spec === 'number') {
    for (let s = 0; s < n; s += spec) out.push(spec);
    return out;
  }
  let s = 0;
  for (const e of spec) {
    const [len, count] = Array.isArray(e) ? e : [e, 1];
    for (let i = 0; i < count && s < n; i++) {
      out.push(len);
      s += len;
    }
  }
  return out;
}

// The value of element number lin (C order over the array).
function value(a, lin) {
  if (a.dtype === 'int32') return lin * 5 - 20;
  if (a.dtype === 'float64') return lin * 0.75 - 2.5;
  return 'e' + lin + (lin % 3 === 0 ? '\u00fc' : '');
}

// Walk a box (lo, n per dimension) in C order.
function walk(lo, n, fn) {
  const total = n.reduce((p, v) => p * v, 1);
  for (let i = 0; i < total; i++) {
    const x = new Array(n.length);
    let r = i;
    for (let d = n.length - 1; d >= 0; d--) {
      x[d] = lo[d] + (r % n[d]);
      r = Math.floor(r / n[d]);
    }
    fn(x);
  }
}

// Encode the values of a chunk (undefined: outside the array) as bytes.
function encode(a, vals) {
  if (a.dtype === 'int32') {
    const b = Buffer.alloc(4 * vals.length);
    vals.forEach((v, i) => b.writeInt32LE(v === undefined ? 123456 : v, 4 * i));
    return b;
  }
  if (a.dtype === 'float64') {
    const b = Buffer.alloc(8 * vals.length);
    vals.forEach((v, i) => b.writeDoubleLE(v === undefined ? 9999.5 : v, 8 * i));
    return b;
  }
  // vlen-utf8: u32 count, then u32 length and the bytes of each
  const parts = [Buffer.alloc(4)];
  parts[0].writeUInt32LE(vals.length, 0);
  for (const v of vals) {
    const s = Buffer.from(v === undefined ? 'junk' : v, 'utf8');
    const h = Buffer.alloc(4);
    h.writeUInt32LE(s.length, 0);
    parts.push(h, s);
  }
  return Buffer.concat(parts);
}

// A shard at lo of n elements per dimension: its inner chunks in C order
// (each bytes then gzip; the one at a.empty left out), then the index of
// (offset, length) u64 pairs and its CRC-32C.
function shard(a, lo, n) {
  const per = n.map((v, d) => v / a.inner[d]);
  const parts = [];
  const index = [];
  let off = 0;
  walk(new Array(n.length).fill(0), per, (q) => {
    if (q.every((v, d) => v === a.empty[d])) {
      index.push(2n ** 64n - 1n, 2n ** 64n - 1n);
      return;
    }
    const vals = [];
    walk(
      q.map((v, d) => lo[d] + v * a.inner[d]),
      a.inner,
      (x) => vals.push(value(a, x.reduce((p, v, d) => p * a.shape[d] + v, 0)))
    );
    const z = zlib.gzipSync(encode(a, vals), { level: 1 });
    index.push(BigInt(off), BigInt(z.length));
    parts.push(z);
    off += z.length;
  });
  const ix = Buffer.alloc(8 * index.length);
  index.forEach((v, i) => ix.writeBigUInt64LE(v, 8 * i));
  const crc = Buffer.alloc(4);
  crc.writeUInt32LE(crc32c(ix), 0);
  return Buffer.concat(parts.concat([ix, crc]));
}

function put(file, data) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data);
}

function writeArray(out, a) {
  const nd = a.shape.length;
  const specs = a.grid.configuration.chunk_shape || a.grid.configuration.chunk_shapes;
  const lens = specs.map((s, d) => lengths(s, a.shape[d]));
  const starts = lens.map((l) => {
    const s = [0];
    for (const v of l) s.push(s[s.length - 1] + v);
    return s;
  });
  const codecs = [
    a.dtype === 'string'
      ? { name: 'vlen-utf8' }
      : { name: 'bytes', configuration: { endian: 'little' } },
  ];
  if (a.gzip) codecs.push({ name: 'gzip', configuration: { level: 6 } });
  if (a.inner) {
    const inner = codecs.concat([{ name: 'gzip', configuration: { level: 1 } }]);
    codecs.length = 0;
    codecs.push({
      name: 'sharding_indexed',
      configuration: {
        chunk_shape: a.inner,
        codecs: inner,
        index_codecs: [{ name: 'bytes', configuration: { endian: 'little' } }, { name: 'crc32c' }],
        index_location: 'end',
      },
    });
  }
  const meta = {
    zarr_format: 3,
    node_type: 'array',
    shape: a.shape,
    data_type: a.dtype,
    chunk_grid: a.grid,
    chunk_key_encoding: { name: 'default', configuration: { separator: '/' } },
    fill_value: a.fill,
    codecs: codecs,
    attributes: {},
  };
  const dir = path.join(out, 'store', a.name);
  const exp = path.join(out, 'expected', a.name);
  put(path.join(dir, 'zarr.json'), JSON.stringify(meta, null, 2));
  const lin = (x) => x.reduce((p, v, d) => p * a.shape[d] + v, 0);
  const keyOf = (c) => ['c'].concat(c).join('/');
  const chunkOf = (x) =>
    x.map((v, d) => {
      let c = 0;
      while (starts[d][c + 1] <= v) c++;
      return c;
    });
  // the inner chunk (of its shard) an element is in, when sharded
  const innerOf = (x) => x.map((v, d) => Math.floor((v - starts[d][chunkOf(x)[d]]) / a.inner[d]));
  const isEmpty = (x) => a.inner && innerOf(x).every((v, d) => v === a.empty[d]);
  const text = (x) => {
    const stored = !a.missing.includes(keyOf(chunkOf(x))) && !isEmpty(x);
    return String(stored ? value(a, lin(x)) : a.fill) + '\n';
  };
  let all = '';
  walk(new Array(nd).fill(0), a.shape, (x) => {
    all += text(x);
  });
  put(path.join(exp, 'values.txt'), all);
  walk(new Array(nd).fill(0), lens.map((l) => l.length), (c) => {
    const key = keyOf(c);
    if (a.missing.includes(key)) return;
    const lo = c.map((v, d) => starts[d][v]);
    const n = c.map((v, d) => lens[d][v]);
    const vals = [];
    let view = '';
    walk(lo, n, (x) => {
      const inside = x.every((v, d) => v < a.shape[d]);
      vals.push(inside ? value(a, lin(x)) : undefined);
      if (inside) view += text(x);
    });
    if (a.inner) {
      put(path.join(dir, key), shard(a, lo, n));
      put(path.join(exp, key + '.txt'), view);
      return;
    }
    const raw = encode(a, vals);
    put(path.join(dir, key), a.gzip ? zlib.gzipSync(raw) : raw);
    put(path.join(exp, key + '.txt'), view);
  });
}

function main() {
  const out = process.argv[2];
  if (!out) {
    process.stderr.write('usage: node rect_writer.js OUT\n');
    process.exit(2);
  }
  put(path.join(out, 'store', 'zarr.json'), JSON.stringify({ zarr_format: 3, node_type: 'group' }));
  put(path.join(out, 'store', 'grp', 'zarr.json'), JSON.stringify({ zarr_format: 3, node_type: 'group' }));
  for (const a of ARRAYS) writeArray(out, a);
  // A rectangular grid whose edges do not add up to the shape: refused.
  const bad = {
    zarr_format: 3,
    node_type: 'array',
    shape: [10],
    data_type: 'int32',
    chunk_grid: { name: 'rectangular', configuration: { chunk_shape: [[3, 4]] } },
    chunk_key_encoding: { name: 'default' },
    fill_value: 0,
    codecs: [{ name: 'bytes', configuration: { endian: 'little' } }],
  };
  put(path.join(out, 'store', 'bad_sum', 'zarr.json'), JSON.stringify(bad));
}

main();
