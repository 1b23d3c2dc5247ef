#!/usr/bin/python3
"""bench/archives.py - the archives of bench/archives.sh, written by the
tools users write them with (netCDF4 and h5py, xarray, zarr-python 2),
run with Debian's /usr/bin/python3.

  archives.py kerchunk DIR --chunks N [--files F] [--tchunk T]
      F netCDF4 files (default 6) of one float32 variable `t2m` (time, lat,
      lon) = (N*T/F, 25, 36), chunks (T, 25, 36) (T default 1), zlib + shuffle, values that
      compress little (about 3.6 KB a chunk), and DIR/refs.json: a kerchunk
      version 1 reference set joining them along time, built from h5py's
      chunk index as kerchunk's SingleHdf5ToZarr + MultiZarrToZarr lay it
      out (filters shuffle then zlib, compressor null). Also lat and lon.
  archives.py table DIR --rows N
      an xarray Dataset of N rows on dimension `obs` (int64 coordinate,
      float64 `x`, float32 `y`, int32 `k`) written with to_zarr (zarr
      V2, chunks of 10^6), consolidated: `obs.csv` is its table.
  archives.py table3 DIR --rows N --chunk C
      the same with 3 columns (coordinate, float64, int64), chunks of C.
  archives.py contiguous DIR --values N
      a netCDF4 file of one contiguous uncompressed float64 variable of N
      values and its kerchunk references (one chunk, one byte range).
  archives.py bad DIR --chunks N --bad K
      a V2 array `counts` of N chunks of 100 int32 whose chunk K holds
      garbage (zlib-compressed stream cut in half), written by zarr-python.

Each command prints nothing on success; DIR is created.
"""
import json
import os
import sys

import numpy as np


def arg(name, default=None):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    if default is None:
        sys.exit("archives.py: %s is needed" % name)
    return default


def zarray(shape, chunks, dtype, filters, compressor, fill):
    return json.dumps({"chunks": list(chunks), "compressor": compressor,
                       "dtype": dtype, "fill_value": fill,
                       "filters": filters, "order": "C",
                       "shape": list(shape), "zarr_format": 2})


def kerchunk(d):
    import h5py
    import netCDF4
    n = int(arg("--chunks"))
    nf = int(arg("--files", "6"))
    tc = int(arg("--tchunk", "1"))
    per = [n // nf + (1 if i < n % nf else 0) for i in range(nf)]
    rng = np.random.default_rng(7)
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            ".zattrs": json.dumps({"title": "bench archive"})}
    t0 = 0
    for i, nt in enumerate(per):
        name = "part%d.nc" % i
        nt *= tc
        path = os.path.join(d, name)
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", 25)
            ds.createDimension("lon", 36)
            v = ds.createVariable("t2m", "f4", ("time", "lat", "lon"),
                                  zlib=True, shuffle=True, complevel=1,
                                  chunksizes=(tc, 25, 36))
            v.units = "K"
            step = 4096
            for s in range(0, nt, step):
                e = min(nt, s + step)
                shp = (e - s, 25, 36)
                v[s:e] = (rng.standard_normal(shp) *
                          np.exp(rng.uniform(-20, 20, shp))).astype("f4")
        with h5py.File(path, "r") as f:
            ds = f["t2m"]
            for c in range(ds.id.get_num_chunks()):
                info = ds.id.get_chunk_info(c)
                tt = info.chunk_offset[0]
                refs["t2m/%d.0.0" % ((t0 + tt) // tc)] = [name, int(info.byte_offset),
                                                  int(info.size)]
        t0 += nt
    refs["t2m/.zarray"] = zarray(
        (n * tc, 25, 36), (tc, 25, 36), "<f4",
        [{"elementsize": 4, "id": "shuffle"}, {"id": "zlib", "level": 1}],
        None, None)
    refs["t2m/.zattrs"] = json.dumps({"_ARRAY_DIMENSIONS": ["time", "lat", "lon"],
                                      "units": "K"})
    for nm, ln in (("lat", 25), ("lon", 36)):
        refs[nm + "/.zarray"] = zarray((ln,), (ln,), "<f8", None, None, None)
        refs[nm + "/.zattrs"] = json.dumps({"_ARRAY_DIMENSIONS": [nm]})
        import base64
        refs[nm + "/0"] = "base64:" + base64.b64encode(
            np.arange(ln, dtype="<f8").tobytes()).decode()
    with open(os.path.join(d, "refs.json"), "w") as f:
        json.dump({"version": 1, "refs": refs}, f)


def table(d, ncols):
    import xarray as xr
    rows = int(arg("--rows"))
    chunk = int(arg("--chunk", str(10 ** 6)))
    obs = np.arange(rows, dtype="i8")
    data = {"x": ("obs", obs * 0.25)}
    if ncols == 4:
        data["y"] = ("obs", (obs % 1000).astype("f4") / 8)
        data["k"] = ("obs", (obs % 65536).astype("i4"))
    else:
        data["k"] = ("obs", obs * 3)
    ds = xr.Dataset(data, coords={"obs": obs})
    enc = {v: {"chunks": (chunk,)} for v in list(data) + ["obs"]}
    ds.to_zarr(os.path.join(d, "group.zarr"), mode="w", encoding=enc,
               consolidated=True)


def contiguous(d):
    import h5py
    import netCDF4
    n = int(arg("--values"))
    path = os.path.join(d, "contig.nc")
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", n)
        v = ds.createVariable("v", "f8", ("x",), contiguous=True)
        step = 1 << 20
        for s in range(0, n, step):
            e = min(n, s + step)
            v[s:e] = np.arange(s, e, dtype="f8") * 0.5
    with h5py.File(path, "r") as f:
        off = f["v"].id.get_offset()
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            "v/.zarray": zarray((n,), (n,), "<f8", None, None, None),
            "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]}),
            "v/0": ["contig.nc", int(off), n * 8]}
    with open(os.path.join(d, "refs.json"), "w") as f:
        json.dump({"version": 1, "refs": refs}, f)


def bad(d):
    import zarr
    n = int(arg("--chunks"))
    k = int(arg("--bad"))
    z = zarr.open(os.path.join(d, "bad.zarr"), mode="w")
    a = z.create_dataset("counts", shape=(n * 100,), chunks=(100,),
                         dtype="<i4")
    a[:] = np.arange(n * 100, dtype="<i4")
    key = os.path.join(d, "bad.zarr", "counts", str(k))
    with open(key, "rb") as f:
        b = f.read()
    with open(key, "wb") as f:
        f.write(b[: len(b) // 2])


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, d = sys.argv[1], sys.argv[2]
    os.makedirs(d, exist_ok=True)
    if cmd == "kerchunk":
        kerchunk(d)
    elif cmd == "table":
        table(d, 4)
    elif cmd == "table3":
        table(d, 3)
    elif cmd == "contiguous":
        contiguous(d)
    elif cmd == "bad":
        bad(d)
    else:
        sys.exit("archives.py: unknown command " + cmd)


if __name__ == "__main__":
    main()
