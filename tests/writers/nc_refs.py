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
value a mount shows with netCDF4's reading of data.nc."""
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
    spec = {"record_size": RECORD_SIZE, "vars": vars_}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(["node", os.path.join(here, "parquet_refs.mjs"), "spec",
                        f.name, out], check=True)
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: nc_refs.py OUTDIR")
    main(sys.argv[1])
