#!/usr/bin/env python3
"""nc_refs.py - a netCDF4 file and its kerchunk Parquet references, made
the way kerchunk's SingleHdf5ToZarr makes references: the chunk index of
each variable from h5py (dataset.id.get_chunk_info: offset and size of
every stored chunk; a contiguous variable's offset from get_offset), chunks
of at most 100 bytes inlined (kerchunk's inline_threshold), unstored chunks
left out (missing: the fill value), zlib and shuffle as the numcodecs
compressor and filter, _FillValue as fill_value. The Parquet files are
written by tests/writers/parquet_refs.mjs (parquet-wasm, hyparquet-writer),
several record files per variable in turn with each writer and codec.

  python3 tests/writers/nc_refs.py OUTDIR

writes OUTDIR/data.nc beside OUTDIR/.zmetadata and OUTDIR/VAR/refs.N.parq
(references name data.nc relative to the folder). Needs python3-netcdf4,
python3-h5py and numpy (Debian), node and the npm writers (see
parquet_refs.mjs). tests/integration/mount_parquet_nc.sh compares every
value a mount shows with netCDF4's reading of data.nc.

  python3 tests/writers/nc_refs.py json FILE.nc OUT.json [--vlen-range]

writes kerchunk JSON references (version 1) of every group and dataset of
a netCDF4 or HDF5 file, the way kerchunk's SingleHdf5ToZarr lays them
out: dimension names from the dimension scales, else phony_dim_N by axis;
fill_value " " on |S arrays, else the dataset's own HDF5 fill value
(null where HDF5's default stands: no value was set);
attributes but kerchunk's hidden ones; netCDF dimensions that are not variables
left out; chunks of at most 100 bytes inlined. Variable-length strings,
which live in the global heap, are inlined (vlen-utf8 chunks), or with
--vlen-range referenced by byte range as a careless writer would (zarrfs
must refuse them, saying so). Targets are named relative to OUT.json."""
import base64
import json
import os
import subprocess
import sys
import tempfile

import h5py
import netCDF4
import numpy as np

RECORD_SIZE = 4
INLINE = 100
RECORDS = [
    {"writer": "wasm", "codec": "ZSTD", "dict": True, "version": 1},
    {"writer": "hyparquet", "codec": "SNAPPY", "dict": False},
    {"writer": "wasm", "codec": "GZIP", "dict": True, "version": 2},
    {"writer": "wasm", "codec": "UNCOMPRESSED", "dict": False, "version": 1},
]


def write_nc(path):
    """The netCDF4 file: compressed, chunked, partly unwritten variables."""
    ds = netCDF4.Dataset(path, "w", format="NETCDF4")
    ds.createDimension("time", 6)
    ds.createDimension("lat", 5)
    ds.createDimension("lon", 8)
    ds.title = "kerchunk Parquet references of a netCDF4 file"
    lat = ds.createVariable("lat", "f8", ("lat",))
    lat[:] = np.linspace(-60.0, 60.0, 5)
    lat.units = "degrees_north"
    lon = ds.createVariable("lon", "i8", ("lon",))
    lon[:] = np.arange(8, dtype=np.int64) * 45 - (1 << 40)
    temp = ds.createVariable("temp", "f4", ("time", "lat", "lon"),
                             zlib=True, shuffle=True, complevel=4,
                             chunksizes=(2, 3, 4), fill_value=-999.0)
    temp.units = "K"
    rng = np.random.default_rng(7)
    full = (rng.standard_normal((6, 5, 8)) * 10 + 280).astype(np.float32)
    temp[0:4, :, :] = full[0:4]  # times 4 and 5 never written: no chunks
    count = ds.createVariable("count", "i2", ("time", "lat"),
                              chunksizes=(3, 5), fill_value=-1)
    count[:] = (np.arange(30, dtype=np.int16).reshape(6, 5) * 7 - 50)
    ds.close()


def zarray(dset, chunks, compressor, filters, fill):
    """The .zarray kerchunk writes for a dataset."""
    return {"chunks": list(chunks), "compressor": compressor,
            "dtype": dset.dtype.str, "fill_value": fill,
            "filters": filters, "order": "C",
            "shape": list(dset.shape), "zarr_format": 2}


def refs_of(h5, name, data_nc):
    """Rows by chunk number (C order) and the .zarray of a variable."""
    d = h5[name]
    fill = d.fillvalue.item() if d.fillvalue is not None else None
    if isinstance(fill, float) and np.isnan(fill):
        fill = "NaN"
    compressor, filters = None, None
    if d.compression == "gzip":
        compressor = {"id": "zlib", "level": d.compression_opts}
    if d.shuffle:
        filters = [{"id": "shuffle", "elementsize": d.dtype.itemsize}]
    raw = open(data_nc, "rb").read()
    if d.chunks is None:  # contiguous: one chunk
        chunks = d.shape
        grid = [1] * len(d.shape)
        off, size = d.id.get_offset(), d.id.get_storage_size()
        stored = {(0,) * len(d.shape): (off, size)}
    else:
        chunks = d.chunks
        grid = [-(-s // c) for s, c in zip(d.shape, chunks)]
        stored = {}
        for i in range(d.id.get_num_chunks()):
            info = d.id.get_chunk_info(i)
            idx = tuple(o // c for o, c in zip(info.chunk_offset, chunks))
            stored[idx] = (info.byte_offset, info.size)
    rows = []
    for idx in np.ndindex(*grid):
        if idx not in stored:
            rows.append([None, 0, 0, None])
            continue
        off, size = stored[idx]
        if size <= INLINE:
            b = raw[off:off + size]
            rows.append([None, 0, 0, base64.b64encode(b).decode()])
        else:
            rows.append(["data.nc", int(off), int(size), None])
    attrs = {k: (v.tolist() if hasattr(v, "tolist") else v)
             for k, v in d.attrs.items()
             if k not in ("_FillValue", "DIMENSION_LIST", "_Netcdf4Dimid",
                          "_Netcdf4Coordinates", "CLASS", "NAME",
                          "REFERENCE_LIST")}
    attrs = {k: (v.decode() if isinstance(v, bytes) else v)
             for k, v in attrs.items()}
    return rows, zarray(d, chunks, compressor, filters, fill), attrs


def main(out):
    os.makedirs(out, exist_ok=True)
    data_nc = os.path.join(out, "data.nc")
    write_nc(data_nc)
    dims = {"lat": ["lat"], "lon": ["lon"], "temp": ["time", "lat", "lon"],
            "count": ["time", "lat"]}
    meta = {".zgroup": {"zarr_format": 2},
            ".zattrs": {"title": "kerchunk Parquet references of a netCDF4 file"}}
    vars_ = {}
    with h5py.File(data_nc, "r") as h5:
        for name in ("lat", "lon", "temp", "count"):
            rows, za, attrs = refs_of(h5, name, data_nc)
            attrs["_ARRAY_DIMENSIONS"] = dims[name]
            meta[name + "/.zarray"] = za
            meta[name + "/.zattrs"] = attrs
            # a record whose rows are all missing is not written at all
            nrec = -(-len(rows) // RECORD_SIZE)
            records = []
            for n in range(nrec):
                part = rows[n * RECORD_SIZE:(n + 1) * RECORD_SIZE]
                if all(r[0] is None and r[3] is None for r in part):
                    records.append({"absent": True})
                else:
                    records.append(RECORDS[n % len(RECORDS)])
            vars_[name] = {"rows": rows, "records": records}
    # .zmetadata as fsspec writes it (json.dumps); the integers of the
    # metadata (NC_FILL_INT64) would not survive JavaScript's numbers
    with open(os.path.join(out, ".zmetadata"), "w") as f:
        f.write(json.dumps({"metadata": meta, "record_size": RECORD_SIZE}))
    write_parquet({"record_size": RECORD_SIZE, "vars": vars_}, out)


def write_parquet(spec, out):
    """The record files a spec describes, by parquet_refs.mjs."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(["node", os.path.join(here, "parquet_refs.mjs"), "spec",
                        f.name, out], check=True)
    finally:
        os.unlink(f.name)


HIDDEN = {"REFERENCE_LIST", "CLASS", "DIMENSION_LIST", "NAME",
          "_Netcdf4Dimid", "_Netcdf4Coordinates", "_nc3_strict",
          "_NCProperties"}


def attr_value(v):
    """An HDF5 attribute as kerchunk's _transfer_attrs writes it."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray):
        if v.size == 1:
            return attr_value(v.flatten()[0])
        return [attr_value(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and np.isnan(v):
        return "NaN"
    if isinstance(v, complex):
        return [attr_value(v.real), attr_value(v.imag)]
    return v


def dims_of(d):
    """kerchunk's _get_array_dims: a dimension scale's name, the dataset's
    own name when it is a scale, else phony_dim_N for axis N."""
    out = []
    for n in range(d.ndim):
        if len(d.dims[n]) == 1:
            out.append(d.dims[n][0].name.split("/")[-1])
        elif h5py.h5ds.is_scale(d.id):
            out.append(d.name.split("/")[-1])
        else:
            out.append(f"phony_dim_{n}")
    return out


def fill_of(d):
    """The fill_value kerchunk writes for dataset d."""
    if d.dtype.kind == "S":
        return " "
    if d.dtype.kind == "O":
        return None
    if d.id.get_create_plist().fill_value_defined() != \
            h5py.h5d.FILL_VALUE_USER_DEFINED:
        return None  # HDF5's default fill, no value of the dataset's own
    f = d.fillvalue
    if f is None:
        return None
    f = f.item() if hasattr(f, "item") else f
    if isinstance(f, complex):
        return [attr_value(f.real), attr_value(f.imag)]
    return attr_value(f)


def vlen_chunk(values):
    """numcodecs' VLenUTF8 encoding of a chunk of strings."""
    out = [len(values).to_bytes(4, "little")]
    for v in values:
        b = v if isinstance(v, bytes) else str(v).encode()
        out += [len(b).to_bytes(4, "little"), b]
    return b"".join(out)


def file_refs(nc, target, vlen_range=False):
    """kerchunk's references (key -> JSON text, "base64:..." or [target,
    offset, size]) of every group and dataset of nc, naming it target."""
    raw = open(nc, "rb").read()
    refs = {}

    def put(key, doc):
        refs[key] = json.dumps(doc)

    def visit(g, prefix):
        put(prefix + ".zgroup", {"zarr_format": 2})
        put(prefix + ".zattrs", {k: attr_value(v) for k, v in g.attrs.items()
                                 if k not in HIDDEN})
        for name, obj in g.items():
            if isinstance(obj, h5py.Group):
                visit(obj, prefix + name + "/")
                continue
            nm = obj.attrs.get("NAME", b"")
            if isinstance(nm, bytes) and nm.startswith(
                    b"This is a netCDF dimension but not a netCDF variable"):
                continue
            dataset(obj, prefix + name + "/")

    def dataset(d, key):
        vlen = h5py.check_string_dtype(d.dtype) is not None and \
            d.dtype.kind == "O"
        compressor, filters = None, None
        if d.compression == "gzip":
            compressor = {"id": "zlib", "level": d.compression_opts}
        if d.shuffle:
            filters = [{"id": "shuffle", "elementsize": d.dtype.itemsize}]
        if vlen:
            filters = [{"id": "vlen-utf8"}]
        chunks = d.chunks or d.shape
        za = {"chunks": list(chunks) if d.ndim else [], "compressor": compressor,
              "dtype": "|O" if vlen else d.dtype.str, "fill_value": fill_of(d),
              "filters": filters, "order": "C", "shape": list(d.shape),
              "zarr_format": 2}
        put(key + ".zarray", za)
        attrs = {k: attr_value(v) for k, v in d.attrs.items()
                 if k not in HIDDEN}
        attrs["_ARRAY_DIMENSIONS"] = dims_of(d)
        put(key + ".zattrs", attrs)
        grid = [-(-s // c) for s, c in zip(d.shape, chunks)]
        stored = {}
        if d.chunks is None:
            off = d.id.get_offset()
            if off is not None:
                stored[(0,) * d.ndim] = (off, d.id.get_storage_size())
        else:
            for i in range(d.id.get_num_chunks()):
                info = d.id.get_chunk_info(i)
                idx = tuple(o // c for o, c in zip(info.chunk_offset, chunks))
                stored[idx] = (info.byte_offset, info.size)
        for idx in np.ndindex(*grid):
            ck = key + (".".join(str(i) for i in idx) if d.ndim else "0")
            if vlen and not vlen_range:
                sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunks))
                vals = np.asarray(d[sl] if d.ndim else d[()], dtype=object)
                vals = list(np.pad(vals, [(0, c - n) for c, n in
                                          zip(chunks, vals.shape)],
                                   constant_values="").ravel()) \
                    if d.ndim else [vals.item()]
                refs[ck] = "base64:" + base64.b64encode(
                    vlen_chunk(vals)).decode()
                continue
            if idx not in stored:
                continue
            off, size = stored[idx]
            if size <= INLINE and not vlen:
                refs[ck] = "base64:" + base64.b64encode(
                    raw[off:off + size]).decode()
            else:
                refs[ck] = [target, int(off), int(size)]

    with h5py.File(nc, "r") as h5:
        visit(h5, "")
    return refs


def json_refs(nc, out, vlen_range=False):
    """kerchunk JSON references of every group and dataset of nc."""
    target = os.path.relpath(os.path.abspath(nc),
                             os.path.dirname(os.path.abspath(out)))
    refs = file_refs(nc, target, vlen_range)
    with open(out, "w") as f:
        json.dump({"version": 1, "refs": refs}, f, indent=0)


def arrays_of(refs):
    """(prefix, .zarray, chunk grid) of every array of refs."""
    for key in sorted(refs):
        if key == ".zarray" or key.endswith("/.zarray"):
            za = json.loads(refs[key])
            grid = [-(-s // c) for s, c in zip(za["shape"], za["chunks"])]
            yield key[:-len(".zarray")], za, grid


def chunk_key(idx):
    """A V2 chunk key: dot-joined indices, "0" for a 0-d array."""
    return ".".join(str(i) for i in idx) if idx else "0"


def parquet_refs(nc, out):
    """The same references in fsspec's LazyReferenceMapper format: OUT/
    .zmetadata and OUT/FIELD/refs.N.parq, nc copied into OUT (targets name
    it relative to OUT), written by parquet_refs.mjs in turn with each
    writer and codec of RECORDS; a record of missing chunks only is not
    written, as fsspec leaves it out."""
    os.makedirs(out, exist_ok=True)
    name = os.path.basename(nc)
    with open(nc, "rb") as src, open(os.path.join(out, name), "wb") as dst:
        dst.write(src.read())
    refs = file_refs(os.path.join(out, name), name)
    meta = {k: json.loads(v) for k, v in refs.items()
            if k.split("/")[-1] in (".zgroup", ".zattrs", ".zarray")}
    vars_ = {}
    for prefix, za, grid in arrays_of(refs):
        rows = []
        for idx in np.ndindex(*grid):
            r = refs.get(prefix + chunk_key(idx))
            if r is None:
                rows.append([None, 0, 0, None])
            elif isinstance(r, list):
                rows.append([r[0], r[1], r[2], None])
            else:
                b = base64.b64decode(r[7:]) if r.startswith("base64:") \
                    else r.encode()
                rows.append([None, 0, 0, base64.b64encode(b).decode()])
        records = []
        for n in range(-(-len(rows) // RECORD_SIZE)):
            part = rows[n * RECORD_SIZE:(n + 1) * RECORD_SIZE]
            absent = all(r[0] is None and r[3] is None for r in part)
            records.append({"absent": True} if absent
                           else RECORDS[n % len(RECORDS)])
        vars_[prefix.rstrip("/")] = {"rows": rows, "records": records}
    with open(os.path.join(out, ".zmetadata"), "w") as f:
        f.write(json.dumps({"metadata": meta, "record_size": RECORD_SIZE}))
    write_parquet({"record_size": RECORD_SIZE, "vars": vars_}, out)


def v3_data_type(dtype):
    """The V3 data type of a V2 dtype (zarr-python 3's names)."""
    if dtype == "|O":
        return "string"
    dt = np.dtype(dtype)
    if dt.kind == "S":
        return {"name": "null_terminated_bytes",
                "configuration": {"length_bytes": dt.itemsize}}
    return dt.name


def v3_fill(d):
    """HDF5's fill value of dataset d (what VirtualiZarr's HDF parser
    takes) as V3 JSON."""
    if d.dtype.kind == "O":
        return ""
    f = d.fillvalue
    if d.dtype.kind == "S":
        return base64.b64encode(bytes(f).ljust(d.dtype.itemsize,
                                               b"\0")).decode()
    f = f.item() if hasattr(f, "item") else f
    if isinstance(f, complex):
        return [attr_value(f.real), attr_value(f.imag)]
    return attr_value(f)


def manifest_refs(nc, out):
    """The same references as a VirtualiZarr manifest store (its V3
    writer, v1.1 to v1.3): OUT/zarr.json per group, OUT/VAR/zarr.json with
    the chunk-manifest-json storage transformer and OUT/VAR/manifest.json
    ({"i.j": {path, offset, length}}, dot-joined keys, absolute file://
    paths, missing chunks left out; chunks kerchunk inlines are inlined as
    base64 "data"); codecs bytes then numcodecs.<id> filters and
    compressor; data_type and fill_value as zarr-python 3 names them,
    fill_value HDF5's own; attributes the .zattrs but _ARRAY_DIMENSIONS,
    which is dimension_names."""
    url = "file://" + os.path.abspath(nc)
    refs = file_refs(nc, url)

    def dump(path, doc):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(doc, f, indent=4, sort_keys=True)

    for key in refs:
        if key == ".zgroup" or key.endswith("/.zgroup"):
            g = key[:-len(".zgroup")]
            dump(os.path.join(out, g, "zarr.json"), {
                "zarr_format": 3, "node_type": "group",
                "attributes": json.loads(refs.get(g + ".zattrs", "{}"))})
    with h5py.File(nc, "r") as h5:
        for prefix, za, grid in arrays_of(refs):
            attrs = json.loads(refs.get(prefix + ".zattrs", "{}"))
            dims = attrs.pop("_ARRAY_DIMENSIONS", None)
            codecs = [{"name": "vlen-utf8"}] if za["dtype"] == "|O" else \
                [{"name": "bytes", "configuration": {
                    "endian": "big" if za["dtype"][0] == ">" else "little"}}]
            for c in (za["filters"] or []) + [za["compressor"]]:
                if c and c["id"] != "vlen-utf8":
                    c = dict(c)
                    codecs.append({"name": "numcodecs." + c.pop("id"),
                                   "configuration": c})
            dump(os.path.join(out, prefix, "zarr.json"), {
                "zarr_format": 3, "node_type": "array",
                "shape": za["shape"],
                "data_type": v3_data_type(za["dtype"]),
                "chunk_grid": {"name": "regular", "configuration": {
                    "chunk_shape": za["chunks"]}},
                "chunk_key_encoding": {"name": "default",
                                       "configuration": {"separator": "/"}},
                "fill_value": v3_fill(h5[prefix.rstrip("/") or "/"]),
                "codecs": codecs,
                "storage_transformers": [{
                    "name": "chunk-manifest-json",
                    "configuration": {"manifest": "./manifest.json"}}],
                "dimension_names": dims, "attributes": attrs})
            man = {}
            for idx in np.ndindex(*grid):
                r = refs.get(prefix + chunk_key(idx))
                k = ".".join(str(i) for i in idx)
                if isinstance(r, list):
                    man[k] = {"path": r[0], "offset": r[1], "length": r[2]}
                elif r is not None:
                    b = base64.b64decode(r[7:]) if r.startswith("base64:") \
                        else r.encode()
                    man[k] = {"path": "__inlined__", "offset": 0,
                              "length": len(b),
                              "data": base64.b64encode(b).decode()}
            dump(os.path.join(out, prefix, "manifest.json"), man)




if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "json":
        json_refs(sys.argv[2], sys.argv[3], "--vlen-range" in sys.argv[4:])
    elif len(sys.argv) == 4 and sys.argv[1] == "parquet":
        parquet_refs(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "manifest":
        manifest_refs(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit("usage: nc_refs.py OUTDIR | nc_refs.py json FILE.nc OUT.json"
                 " [--vlen-range] | nc_refs.py parquet|manifest FILE.nc OUTDIR")
