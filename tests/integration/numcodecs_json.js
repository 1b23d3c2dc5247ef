// numcodecs_json.js - an independent writer of Zarr V2 object arrays in
// the format of numcodecs' JSON object codecs, for mount_json.sh.
//
// Usage: node numcodecs_json.js STORE EXPECTED
// Writes the V2 store STORE (a group of arrays) and, for each array NAME,
// EXPECTED/NAME.txt: its values.txt as zarrfs documents it (one element a
// line; a string item is its text with a newline shown as a space, any
// other item its compact JSON text; a missing chunk gives empty lines, the
// text of the fill value null).
//
// The chunks follow numcodecs (not zarrfs): numpy's tolist() of the whole
// chunk (nested lists, one level per dimension; an edge chunk is padded with
// None), then "|O" (legacy `json`), then the shape (`json2`), written the
// way Python's json module writes with numcodecs' defaults: separators
// (",", ":"), ensure_ascii (\uXXXX escapes, surrogate pairs beyond the BMP),
// sort_keys, NaN/Infinity, and floats in Python's repr. Plain JS, node's
// standard library only (zlib for the compressors).
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

// A Python float (JS numbers are Python ints unless wrapped).
class PyFloat {
  constructor(x) {
    this.x = x;
  }
}

// Python's repr of a float: shortest digits, exponent form when the
// exponent is below -4 or at least 16 (at least two exponent digits).
function pyFloat(x) {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  const [m, es] = Math.abs(x).toExponential().split('e');
  const e = parseInt(es, 10);
  const digits = m.replace('.', '');
  if (e < -4 || e >= 16) {
    const mant = digits.length > 1 ? digits[0] + '.' + digits.slice(1) : digits;
    const ex = String(Math.abs(e)).padStart(2, '0');
    return sign + mant + 'e' + (e < 0 ? '-' : '+') + ex;
  }
  if (e < 0) return sign + '0.' + '0'.repeat(-e - 1) + digits;
  const int = digits.slice(0, e + 1).padEnd(e + 1, '0');
  return sign + int + '.' + (digits.slice(e + 1) || '0');
}

// Python's json string with ensure_ascii: everything outside space..~
// escaped, \uXXXX in lowercase hex (UTF-16 units: surrogate pairs, lone
// surrogates as they are).
function pyString(s) {
  const short = {'"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r',
                 '\t': '\\t', '\b': '\\b', '\f': '\\f'};
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s[i], u = s.charCodeAt(i);
    if (short[c]) out += short[c];
    else if (u < 0x20 || u > 0x7e) out += '\\u' + u.toString(16).padStart(4, '0');
    else out += c;
  }
  return out + '"';
}

// json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=True).
function pyDumps(v) {
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (v instanceof PyFloat) return pyFloat(v.x);
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new Error('wrap floats in PyFloat');
    return String(v);
  }
  if (typeof v === 'string') return pyString(v);
  if (Array.isArray(v)) return '[' + v.map(pyDumps).join(',') + ']';
  const keys = Object.keys(v).sort();
  return '{' + keys.map((k) => pyString(k) + ':' + pyDumps(v[k])).join(',') + '}';
}

// The text zarrfs shows for one element.
function textOf(v) {
  return typeof v === 'string' ? v.replace(/\n/g, ' ') : pyDumps(v);
}

// numpy's tolist() of a chunk in C order: nested lists along shape.
function nest(flat, shape) {
  if (shape.length <= 1) return flat.slice();
  const step = flat.length / shape[0], out = [];
  for (let i = 0; i < shape[0]; i++)
    out.push(nest(flat.slice(i * step, (i + 1) * step), shape.slice(1)));
  return out;
}

// numcodecs' config of a JSON codec (its get_config()).
function codecConfig(id) {
  return {id, encoding: 'utf-8', skipkeys: false, ensure_ascii: true,
          check_circular: true, allow_nan: true, sort_keys: true,
          indent: null, separators: [',', ':'], strict: true};
}

// Write array `name`: values in C order of `shape`, chunked by `chunks`;
// `codec` "json" or "json2"; `compressor` null or {id: "zlib"|"gzip"};
// chunk keys listed in `skip` are not written (missing chunks).
function writeArray(store, expected, a) {
  const dir = path.join(store, a.name);
  fs.mkdirSync(dir, {recursive: true});
  const meta = {chunks: a.chunks, compressor: a.compressor, dtype: '|O',
                fill_value: null, filters: [codecConfig(a.codec)],
                order: 'C', shape: a.shape, zarr_format: 2};
  fs.writeFileSync(path.join(dir, '.zarray'), JSON.stringify(meta, null, 4));
  const nd = a.shape.length;
  const grid = a.shape.map((s, d) => Math.ceil(s / a.chunks[d]));
  const stride = (shape) => shape.map((_, d) =>
    shape.slice(d + 1).reduce((x, y) => x * y, 1));
  const astride = stride(a.shape), cstride = stride(a.chunks);
  const csize = a.chunks.reduce((x, y) => x * y, 1);
  const ngrid = grid.reduce((x, y) => x * y, 1);
  for (let g = 0; g < ngrid; g++) {
    const gi = grid.map((_, d) => Math.floor(g / stride(grid)[d]) % grid[d]);
    const key = gi.join('.');
    if (a.skip.includes(key)) continue;
    const flat = [];
    for (let k = 0; k < csize; k++) {
      let idx = 0, inside = true;
      for (let d = 0; d < nd; d++) {
        const x = gi[d] * a.chunks[d] + (Math.floor(k / cstride[d]) % a.chunks[d]);
        if (x >= a.shape[d]) inside = false;
        idx += x * astride[d];
      }
      flat.push(inside ? a.values[idx] : null); /* padding: the fill None */
    }
    const items = nest(flat, a.chunks);
    items.push('|O');
    if (a.codec === 'json2') items.push(a.chunks.slice());
    let doc = Buffer.from(pyDumps(items), 'ascii');
    if (a.compressor && a.compressor.id === 'zlib') doc = zlib.deflateSync(doc);
    if (a.compressor && a.compressor.id === 'gzip') doc = zlib.gzipSync(doc);
    fs.writeFileSync(path.join(dir, key), doc);
  }
  // Expected values.txt: a missing chunk's elements show the fill (empty).
  const lines = a.values.map((v, i) => {
    const gi = a.shape.map((_, d) =>
      Math.floor(Math.floor(i / astride[d]) % a.shape[d] / a.chunks[d]));
    return a.skip.includes(gi.join('.')) ? '' : textOf(v);
  });
  fs.writeFileSync(path.join(expected, a.name + '.txt'),
                   lines.map((l) => l + '\n').join(''));
}

function main() {
  const [store, expected] = process.argv.slice(2);
  if (!store || !expected) {
    process.stderr.write('usage: node numcodecs_json.js STORE EXPECTED\n');
    process.exit(2);
  }
  fs.mkdirSync(store, {recursive: true});
  fs.mkdirSync(expected, {recursive: true});
  fs.writeFileSync(path.join(store, '.zgroup'), '{"zarr_format":2}');
  const strings = ['plain', 'null', '', 'caf\u00e9 \u00fcber', 'two\nlines',
                   'say "hi" \\o/', 'tab\there', '\u{1F600} emoji',
                   '\u65e5\u672c\u8a9e', 'lone \ud800 surrogate', 'grep me',
                   'last'];
  const mixed = [1, -7, new PyFloat(1.5), new PyFloat(1e-5),
                 new PyFloat(1e20), new PyFloat(100), new PyFloat(NaN),
                 new PyFloat(-Infinity), null, true, false, [1, [2, 'x']],
                 {b: 1, a: [null]}, 'text', 'null', [], 12345678901234,
                 new PyFloat(-0), 'z', 'end'];
  const arrays = [
    // 1-D strings, legacy json, chunk 1 missing, an edge chunk.
    {name: 'strings', codec: 'json', shape: [12], chunks: [5],
     compressor: null, skip: ['1'], values: strings},
    // The same values in json2 with gzip: both codecs, one writer.
    {name: 'strings_json2', codec: 'json2', shape: [12], chunks: [5],
     compressor: {id: 'gzip', level: 1}, skip: [], values: strings},
    // 2-D mixed items, legacy json, zlib, edge chunks, chunk 1.1 missing.
    {name: 'mixed', codec: 'json', shape: [4, 5], chunks: [3, 3],
     compressor: {id: 'zlib', level: 1}, skip: ['1.1'], values: mixed},
    // 3-D, legacy json.
    {name: 'cube', codec: 'json', shape: [2, 2, 3], chunks: [2, 1, 3],
     compressor: null, skip: [],
     values: Array.from({length: 12}, (_, i) => 'c' + i)},
  ];
  for (const a of arrays) writeArray(store, expected, a);
}

main();
