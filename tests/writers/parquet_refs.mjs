// parquet_refs.mjs - kerchunk Parquet references (fsspec's
// LazyReferenceMapper format) written by independent Parquet writers:
// parquet-wasm (arrow-rs compiled to WebAssembly, with apache-arrow) and
// hyparquet-writer (plain JavaScript). The reader under test
// (src/parquet/) shares nothing with them.
//
//   node parquet_refs.mjs fixture OUTDIR      the store of
//                                             tests/data/parquet-refs/
//   node parquet_refs.mjs spec SPEC.json OUTDIR   the store a spec describes
//                                             (tests/writers/nc_refs.py)
//
// The writers come from npm into a prefix of their own (ZARRFS_PQW_DIR,
// default /opt/zarrfs-pqw/node_modules):
//   npm install --prefix /opt/zarrfs-pqw hyparquet-writer@0.17.0 \
//     parquet-wasm@0.8.0 apache-arrow@21.2.0
//
// A spec: {"record_size": R, "metadata": {KEY: OBJECT}, "vars": {FIELD:
// {"rows": [[path|null, offset, size, raw_base64|null], ...] (by chunk
// number), "records": [{"writer": "wasm"|"hyparquet", "codec": "ZSTD",
// "dict": true|false, "version": 1|2, "columns": [...], "absent": true,
// "int32": true}, ...] (one per record file; the last repeats)}}}.
// .zmetadata is written as Python's json.dumps writes it, as fsspec does
// (a spec without "metadata" leaves .zmetadata to its author: JavaScript
// numbers cannot carry every 64-bit integer, such as NC_FILL_INT64).
import fs from 'node:fs'
import path from 'node:path'

const dir = process.env.ZARRFS_PQW_DIR || '/opt/zarrfs-pqw/node_modules'
const arrow = await import(path.join(dir, 'apache-arrow/Arrow.node.js'))
const pw = (await import(path.join(dir, 'parquet-wasm/node/parquet_wasm.js'))).default
const hw = await import(path.join(dir, 'hyparquet-writer/src/index.js'))

// Python's json.dumps: ", " and ": " separators, ASCII only.
function pyjson(v) {
  if (v === null) return 'null'
  if (Array.isArray(v)) return '[' + v.map(pyjson).join(', ') + ']'
  if (typeof v === 'object') {
    return '{' + Object.entries(v).map(([k, x]) => pyjson(k) + ': ' + pyjson(x)).join(', ') + '}'
  }
  if (typeof v === 'string') {
    return JSON.stringify(v).replace(/[\u007f-\uffff]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
  }
  if (typeof v === 'number' && Number.isNaN(v)) return 'NaN'
  return JSON.stringify(v)
}

// One record file's rows as columns.
function columnsOf(rows) {
  return {
    path: rows.map(r => r[0]),
    offset: rows.map(r => BigInt(r[1])),
    size: rows.map(r => BigInt(r[2])),
    raw: rows.map(r => (r[3] == null ? null : new Uint8Array(Buffer.from(r[3], 'base64')))),
  }
}

// parquet-wasm: arrow table -> Parquet (arrow-rs), codec, dictionary,
// data page version as asked; statistics off, as fsspec asks.
function writeWasm(cols, rec) {
  const want = rec.columns || ['path', 'offset', 'size', 'raw']
  const vecs = {}
  for (const name of want) {
    if (name === 'path') {
      vecs.path = rec.dict
        ? arrow.vectorFromArray(cols.path, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()))
        : arrow.vectorFromArray(cols.path, new arrow.Utf8())
    } else if (name === 'raw') {
      vecs.raw = arrow.vectorFromArray(cols.raw, new arrow.Binary())
    } else if (rec.int32) {
      vecs[name] = arrow.vectorFromArray(cols[name].map(Number), new arrow.Int32())
    } else {
      vecs[name] = arrow.vectorFromArray(cols[name], new arrow.Int64())
    }
  }
  const table = new arrow.Table(vecs)
  const wt = pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream'))
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression[rec.codec || 'ZSTD'])
    .setDictionaryEnabled(!!rec.dict)
    .setWriterVersion(rec.version === 2 ? pw.WriterVersion.V2 : pw.WriterVersion.V1)
    .setStatisticsEnabled(pw.EnabledStatistics.None)
    .build()
  return pw.writeParquet(wt, props)
}

// hyparquet-writer: data pages v2, SNAPPY or UNCOMPRESSED; path PLAIN
// unless dict.
function writeHyparquet(cols, rec) {
  const want = rec.columns || ['path', 'offset', 'size', 'raw']
  const columnData = want.map(name => {
    if (name === 'path') {
      return { name, data: cols.path, type: 'STRING', encoding: rec.dict ? 'RLE_DICTIONARY' : 'PLAIN' }
    }
    if (name === 'raw') return { name, data: cols.raw, type: 'BYTE_ARRAY', encoding: 'PLAIN' }
    if (rec.int32) return { name, data: cols[name].map(Number), type: 'INT32', nullable: false }
    return { name, data: cols[name], type: 'INT64', nullable: false }
  })
  const buf = hw.parquetWriteBuffer({ columnData, codec: rec.codec || 'SNAPPY', statistics: false })
  return new Uint8Array(buf)
}

// Write the store a spec describes into out.
export function writeStore(out, spec) {
  fs.mkdirSync(out, { recursive: true })
  const R = spec.record_size
  if (spec.metadata) { // else the spec's author wrote .zmetadata
    fs.writeFileSync(path.join(out, '.zmetadata'), pyjson({ metadata: spec.metadata, record_size: R }))
  }
  for (const [field, v] of Object.entries(spec.vars)) {
    const nrec = Math.ceil(v.rows.length / R)
    fs.mkdirSync(path.join(out, field), { recursive: true })
    for (let n = 0; n < nrec; n++) {
      const rec = v.records[Math.min(n, v.records.length - 1)]
      const file = path.join(out, field, `refs.${n}.parq`)
      if (rec.absent) {
        fs.rmSync(file, { force: true })
        continue
      }
      const rows = v.rows.slice(n * R, n * R + R)
      while (rows.length < R) rows.push([null, 0, 0, null]) // fsspec pads
      const cols = columnsOf(rows)
      fs.writeFileSync(file, rec.writer === 'hyparquet' ? writeHyparquet(cols, rec) : writeWasm(cols, rec))
    }
  }
}

// Little-endian bytes of values of a Zarr V2 dtype.
function bytesOf(dtype, vals) {
  const size = Number(dtype.slice(2))
  const b = Buffer.alloc(size * vals.length)
  vals.forEach((x, i) => {
    if (dtype === '<i2') b.writeInt16LE(x, i * 2)
    else if (dtype === '<i4') b.writeInt32LE(x, i * 4)
    else if (dtype === '<i8') b.writeBigInt64LE(BigInt(x), i * 8)
    else if (dtype === '<f8') b.writeDoubleLE(x, i * 8)
    else throw new Error(dtype)
  })
  return b
}

// The fixture store: four arrays whose record files cover the layout's
// cases, and the values each should show (expected/FIELD.txt).
function fixture(out) {
  fs.mkdirSync(out, { recursive: true })
  const zarray = (shape, chunks, dtype, fill) => ({
    chunks, compressor: null, dtype, fill_value: fill, filters: null,
    order: 'C', shape, zarr_format: 2,
  })
  const meta = {
    '.zgroup': { zarr_format: 2 },
    '.zattrs': { title: 'kerchunk Parquet references, written by parquet-wasm and hyparquet-writer' },
    'a/.zarray': zarray([38], [4], '<i4', -1),
    'a/.zattrs': { _ARRAY_DIMENSIONS: ['x'] },
    'g/.zgroup': { zarr_format: 2 },
    'g/b/.zarray': zarray([5, 6], [2, 4], '<i8', 0),
    'c/.zarray': zarray([7], [7], '<f8', 0.0),
    'z/.zarray': zarray([], [], '<i2', 0),
  }
  const data = [] // data.bin, built as chunks are placed
  let dataLen = 0
  const place = buf => { data.push(buf); dataLen += buf.length; return [dataLen - buf.length, buf.length] }
  const ref = buf => { const [o, n] = place(buf); return ['data.bin', o, n, null] }
  const b64 = buf => buf.toString('base64')
  const expected = {}

  // a: 10 chunks of 4 int32; record 0 dictionary path + ZSTD + v1 pages
  // (one missing, one inline), record 1 absent, record 2 plain path +
  // SNAPPY + v2 pages (a whole-object reference).
  const aval = i => i * 3 - 50
  const achunk = c => bytesOf('<i4', [0, 1, 2, 3].map(k => aval(c * 4 + k)))
  const arows = []
  arows[0] = ref(achunk(0))
  arows[1] = ref(achunk(1))
  arows[2] = [null, 0, 0, null]
  arows[3] = [null, 0, 0, b64(achunk(3))]
  for (let c = 4; c < 8; c++) arows[c] = [null, 0, 0, null]
  fs.writeFileSync(path.join(out, 'whole.bin'), achunk(8))
  arows[8] = ['whole.bin', 0, 0, null]
  arows[9] = ref(achunk(9))
  const aMissing = c => c === 2 || (c >= 4 && c < 8)
  expected.a = Array.from({ length: 38 }, (_, i) => (aMissing(Math.floor(i / 4)) ? -1 : aval(i)))

  // g/b: 5x6 int64 in 2x4 chunks (grid 3x2); record 0 dictionary path +
  // GZIP + v2 pages, record 1 plain path, uncompressed, v1 pages.
  const bval = (i, j) => BigInt(i * 100 + j) * 1000000007n
  const brows = []
  for (let ci = 0; ci < 3; ci++) {
    for (let cj = 0; cj < 2; cj++) {
      const vals = []
      for (let i = 0; i < 2; i++) for (let j = 0; j < 4; j++) vals.push(bval(ci * 2 + i, cj * 4 + j))
      brows.push(ref(bytesOf('<i8', vals)))
    }
  }
  expected['g/b'] = []
  for (let i = 0; i < 5; i++) for (let j = 0; j < 6; j++) expected['g/b'].push(bval(i, j))

  // c: one float64 chunk, no raw column (an all-URL file), parquet-wasm
  // SNAPPY with every column dictionary-encoded (INT64 dictionaries).
  const cvals = Array.from({ length: 7 }, (_, i) => i / 3 - 1)
  const crows = [ref(bytesOf('<f8', cvals))]
  expected.c = cvals

  // z: a 0-d int16, only a raw column (an all-inline file), hyparquet
  // UNCOMPRESSED with INT32 offsets... none: raw alone.
  const zrows = [[null, 0, 0, b64(bytesOf('<i2', [-7]))]]
  expected.z = [-7]

  // bad: a chunk outside the allowed roots, a negative offset, a range
  // past the end of its target, and one good chunk (a's chunk 0).
  meta['bad/.zarray'] = zarray([16], [4], '<i4', 0)
  meta['delta/.zarray'] = zarray([4], [4], '<i4', 0)
  const badrows = [['/etc/hostname', 0, 4, null], ['data.bin', -5, 16, null],
    ['data.bin', 480, 16, null], ['data.bin', 0, 16, null]]

  fs.writeFileSync(path.join(out, 'data.bin'), Buffer.concat(data))
  writeStore(out, {
    record_size: 4,
    metadata: meta,
    vars: {
      a: {
        rows: arows,
        records: [
          { writer: 'wasm', codec: 'ZSTD', dict: true, version: 1 },
          { absent: true },
          { writer: 'hyparquet', codec: 'SNAPPY', dict: false },
        ],
      },
      'g/b': {
        rows: brows,
        records: [
          { writer: 'wasm', codec: 'GZIP', dict: true, version: 2 },
          { writer: 'wasm', codec: 'UNCOMPRESSED', dict: false, version: 1 },
        ],
      },
      c: { rows: crows, records: [{ writer: 'wasm', codec: 'SNAPPY', dict: true, version: 1, columns: ['path', 'offset', 'size'] }] },
      bad: { rows: badrows, records: [{ writer: 'wasm', codec: 'ZSTD', dict: false, version: 1 }] },
      // arrow-rs writes strings of v2 pages without a dictionary in
      // DELTA_BYTE_ARRAY, which the reader refuses by name.
      delta: { rows: [['data.bin', 0, 16, null]], records: [{ writer: 'wasm', codec: 'ZSTD', dict: false, version: 2 }] },
      z: { rows: zrows, records: [{ writer: 'hyparquet', codec: 'UNCOMPRESSED', columns: ['raw'] }] },
    },
  })
  fs.mkdirSync(path.join(out, '..', 'expected'), { recursive: true })
  for (const [k, v] of Object.entries(expected)) {
    fs.writeFileSync(path.join(out, '..', 'expected', k.replace('/', '_') + '.txt'), v.map(String).join('\n') + '\n')
  }
}

const [mode, a1, a2] = process.argv.slice(2)
if (mode === 'fixture' && a1) {
  fixture(a1)
} else if (mode === 'spec' && a1 && a2) {
  writeStore(a2, JSON.parse(fs.readFileSync(a1, 'utf8')))
} else {
  console.error('usage: node parquet_refs.mjs fixture OUTDIR | spec SPEC.json OUTDIR')
  process.exit(2)
}
