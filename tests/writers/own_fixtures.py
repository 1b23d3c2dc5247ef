#!/usr/bin/python3
"""own_fixtures.py - conformance fixtures the tests make themselves.

Writes, under OUT, what a fresh clone has no ../shared/fixtures for:

  OUT/zarr-python-v2/v2_python.zarr      V2 arrays written by zarr-python 2
  OUT/zarr-python-v2/expected_v2.json    their values, read back by it
  OUT/xarray/xarray_v2.zarr              a dataset written by xarray's
                                         to_zarr (CF encodings, consolidated)
  OUT/xarray/expected.txt                its variables' values, read back
                                         by xarray (decode_cf=False)
  OUT/zarr-v3-spec/hierarchy.zarr        the example hierarchy of the Zarr
                                         V3 specification (groups a and b,
                                         arrays a/baz and a/foo, no chunks)
  OUT/kerchunk/refs/*.json               kerchunk references (version 0
                                         and 1) into OUT/kerchunk/refs/blob.bin
  OUT/kerchunk/expected_refs.json        their values (written last: its
                                         presence says the rest is there)

in the layout and the value encoding of ../shared/fixtures (its README.md:
values flattened in C order, 64-bit integers as decimal strings, floats
with their bit patterns, vlen-bytes and |S as hex), so the same tests read
either. Needs Debian's python3-zarr, python3-numcodecs and python3-numpy
(python3-xarray for the xarray store, left out without it): run it with
/usr/bin/python3. The output is the same on every run.

Usage: own_fixtures.py OUT
"""
import base64
import json
import math
import os
import shutil
import struct
import sys

import numcodecs
import numpy as np
import zarr

FLOAT_BITS = {2: ("<e", "<H", 4), 4: ("<f", "<I", 8), 8: ("<d", "<Q", 16)}


def float_value(x, size):
    """A float as the fixtures write it: a JSON number or a named string."""
    f = float(x)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    if f == 0 and math.copysign(1, f) < 0:
        return "-0.0"
    return f


def float_bits(x, size):
    fmt, ifmt, digits = FLOAT_BITS[size]
    (b,) = struct.unpack(ifmt, struct.pack(fmt, x))
    return "0x%0*x" % (digits, b)


def encode(a):
    """The expected entry's values (and bits, raw_hex) of numpy array a."""
    flat = np.ascontiguousarray(a).reshape(-1)
    kind, size = a.dtype.kind, a.dtype.itemsize
    out = {}
    if kind == "f":
        native = flat.astype(a.dtype.newbyteorder("="))
        out["values"] = [float_value(x, size) for x in native]
        out["bits"] = [float_bits(x, size) for x in native]
    elif kind in "iu":
        out["values"] = [str(int(x)) if size == 8 else int(x) for x in flat]
    elif kind == "b":
        out["values"] = [bool(x) for x in flat]
    elif kind == "U":
        out["values"] = [str(x) for x in flat]
        out["raw_hex"] = [flat[i:i + 1].tobytes().hex() for i in range(flat.size)]
    elif kind == "S":
        out["values"] = [bytes(x).hex() for x in flat]
        out["raw_hex"] = [flat[i:i + 1].tobytes().hex() for i in range(flat.size)]
    elif kind == "O":
        out["values"] = [
            None if x is None else x.hex() if isinstance(x, bytes) else str(x)
            for x in flat
        ]
    return out


def codec_json(c):
    return None if c is None else c.get_config()


def v2_arrays(rng):
    """(path, data, kwargs, write) of each array: write None writes all."""
    ints = {}
    for dt in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"):
        info = np.iinfo(dt)
        v = rng.randint(info.min, info.max, size=37, dtype=dt)
        v[:3] = (info.min, info.max, 0)
        ints[dt] = v
    floats = {}
    for dt in ("f2", "f4", "f8"):
        v = (rng.standard_normal(37) * 1000).astype(dt)
        v[:6] = (0.0, -0.0, np.nan, np.inf, -np.inf, np.finfo(dt).max)
        v[6] = np.finfo(dt).tiny
        floats[dt] = v
    out = []
    for dt, v in list(ints.items()) + list(floats.items()):
        for bo in ("<", ">") if np.dtype(dt).itemsize > 1 else ("|",):
            name = ("le_" if bo == "<" else "be_" if bo == ">" else "") + dt
            out.append(("dtypes/" + name, v.astype(bo + dt), dict(chunks=10), None))
    out.append(("dtypes/b1", np.arange(37) % 3 == 0, dict(chunks=10), None))
    B = numcodecs.Blosc
    comps = [
        ("blosc_lz4_shuffle_f8", floats["f8"], B("lz4", 5, B.SHUFFLE)),
        ("blosc_lz4_bitshuffle_i4", ints["i4"], B("lz4", 5, B.BITSHUFFLE)),
        ("blosc_zstd_shuffle_i2", ints["i2"], B("zstd", 3, B.SHUFFLE)),
        ("blosc_blosclz_noshuffle_u1", ints["u1"], B("blosclz", 5, B.NOSHUFFLE)),
        ("blosc_lz4hc_shuffle_i8", ints["i8"], B("lz4hc", 5, B.SHUFFLE)),
        ("blosc_zlib_shuffle_u2", ints["u2"], B("zlib", 5, B.SHUFFLE)),
        ("zlib_l1_i4", ints["i4"], numcodecs.Zlib(1)),
        ("zlib_l9_be_f8", floats["f8"].astype(">f8"), numcodecs.Zlib(9)),
        ("gzip_l1_u4", ints["u4"], numcodecs.GZip(1)),
        ("zstd_l1_i8", ints["i8"], numcodecs.Zstd(1)),
        ("zstd_l22_be_u8", ints["u8"].astype(">u8"), numcodecs.Zstd(22)),
        ("lz4_i2", ints["i2"], numcodecs.LZ4()),
    ]
    for name, v, c in comps:
        out.append(("compressors/" + name, v, dict(chunks=10, compressor=c), None))
    m = np.arange(7 * 5, dtype="i4").reshape(7, 5) * 7 - 100
    out.append(("order/F_2d_i4_zlib", m, dict(chunks=(3, 2), order="F", compressor=numcodecs.Zlib(5)), None))
    out.append(("order/F_2d_be_u2_none", m.astype(">u2"), dict(chunks=(4, 4), order="F", compressor=None), None))
    out.append(("separator/slash_2d_i4", m, dict(chunks=(3, 2), dimension_separator="/"), None))
    c3 = np.arange(4 * 3 * 5, dtype="f4").reshape(4, 3, 5) / 8
    out.append(("separator/slash_3d_f4_F", c3, dict(chunks=(3, 2, 2), order="F", dimension_separator="/"), None))
    out.append(("misc/scalar_0d_f8", np.array(2.5), dict(), None))
    out.append(("misc/chunk_larger_than_shape", ints["i2"][:5], dict(chunks=16), None))
    out.append(("filters/delta_i4_zlib", np.cumsum(ints["u1"]).astype("i4"),
                dict(chunks=10, filters=[numcodecs.Delta("i4")], compressor=numcodecs.Zlib(5)), None))
    # missing chunks: only the slices named are written, the rest is fill
    out.append(("missing/i2_fill42", ints["i2"], dict(chunks=10, fill_value=42), [slice(10, 20)]))
    out.append(("missing/f8_fill_minus_1_5_F", m.astype("f8"),
                dict(chunks=(3, 2), fill_value=-1.5, order="F"), [(slice(0, 3), slice(2, 4))]))
    out.append(("missing/u8_fill_max", ints["u8"], dict(chunks=10, fill_value=2**64 - 1), [slice(0, 10)]))
    words = ["", "a", "ünïcödé", "日本語", "tab\there", "emoji 🚀", "x" * 300, "last"]
    s = np.array([words[i % len(words)] + str(i) for i in range(20)], dtype=object)
    out.append(("strings/vlen_utf8_raw", s, dict(chunks=6, dtype=str, object_codec=numcodecs.VLenUTF8(), compressor=None), None))
    out.append(("strings/vlen_utf8_zstd_missing", s, dict(chunks=6, dtype=str, fill_value="", object_codec=numcodecs.VLenUTF8(),
                                                          compressor=numcodecs.Zstd(3)), [slice(6, 12)]))
    b = np.array([bytes(range(i % 7)) + b"\xff" * (i % 3) for i in range(11)], dtype=object)
    out.append(("strings/vlen_bytes_zlib", b, dict(chunks=4, dtype=bytes, object_codec=numcodecs.VLenBytes(),
                                                   compressor=numcodecs.Zlib(5)), None))
    u = np.array(["abc", "", "ü😀", "12345678", "日本語", "a\0b", "last"], dtype="<U8")
    out.append(("strings/fixed_U8_le", u, dict(chunks=3), None))
    out.append(("strings/fixed_U4_be", u.astype(">U4"), dict(chunks=3, compressor=numcodecs.Zlib(1)), None))
    sb = np.array([b"abc", b"", b"\x00\x01\xff", b"12345", b"a\x00b"], dtype="|S5")
    out.append(("strings/fixed_S5", sb, dict(chunks=2), None))
    return out


def write_v2(out):
    d = os.path.join(out, "zarr-python-v2")
    store_path = os.path.join(d, "v2_python.zarr")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    root = zarr.open_group(store_path, mode="w")
    rng = np.random.RandomState(20261202)
    arrays = []
    for path, data, kw, parts in v2_arrays(rng):
        kw = dict(kw)
        kw.setdefault("dtype", data.dtype)
        a = root.create_dataset(path, shape=data.shape, **kw)
        if parts is None:
            a[...] = data
        else:
            for p in parts:
                a[p] = data[p]
        back = a[...]
        e = {
            "path": path,
            "shape": list(a.shape),
            "chunks": list(a.chunks),
            "dtype": a.dtype.str,
            "order": a.order,
            "compressor": codec_json(a.compressor),
            "filters": [f.get_config() for f in a.filters] if a.filters else None,
            "fill_value": None,
            "stored_chunks": sorted(k for k in os.listdir(os.path.join(store_path, path))
                                    if not k.startswith(".")),
            "writer": "zarr-python %s + numcodecs %s" % (zarr.__version__, numcodecs.__version__),
        }
        e.update(encode(np.asarray(back)))
        arrays.append(e)
    zarr.consolidate_metadata(store_path)
    doc = {
        "format": "zarr-conformance-expected/1",
        "store": "v2_python.zarr",
        "zarr_format": 2,
        "generator": "tests/writers/own_fixtures.py",
        "read_back_by": "zarr-python %s (the writer)" % zarr.__version__,
        "arrays": arrays,
    }
    with open(os.path.join(d, "expected_v2.json"), "w") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
    return arrays


def write_xarray(out):
    """A dataset as xarray writes it to Zarr V2: dimension names in
    _ARRAY_DIMENSIONS, CF attributes, a packed int16 variable (scale_factor,
    add_offset, _FillValue), times in days since an epoch, a coordinate,
    consolidated metadata. False when xarray is not installed."""
    try:
        import xarray as xr
    except ImportError:
        return False
    d = os.path.join(out, "xarray")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    t = np.datetime64("2020-01-01", "D") + np.arange(4).astype("timedelta64[D]")
    lat = np.array([-45.0, 0.0, 45.0])
    lon = np.array([0.0, 90.0, 180.0, 270.0])
    temp = (np.arange(48, dtype="f4").reshape(4, 3, 4) * 0.5 - 3).astype("f4")
    temp[1, 2, 3] = np.nan
    ds = xr.Dataset(
        {"temp": (("time", "lat", "lon"), temp,
                  {"units": "degC", "long_name": "air temperature"}),
         "count": (("time",), np.array([3, 1, 4, 1], dtype="i4"))},
        coords={"time": t, "lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"})},
        attrs={"title": "own_fixtures.py: xarray", "Conventions": "CF-1.8"})
    enc = {"temp": {"dtype": "i2", "scale_factor": 0.5, "add_offset": 0.0,
                    "_FillValue": -32768, "chunks": (2, 3, 4)},
           "time": {"units": "days since 2020-01-01", "calendar": "standard",
                    "dtype": "i4"}}
    store = os.path.join(d, "xarray_v2.zarr")
    ds.to_zarr(store, encoding=enc, consolidated=True, mode="w")
    back = xr.open_zarr(store, decode_cf=False, consolidated=True)
    with open(os.path.join(d, "expected.txt"), "w") as f:
        for name in sorted(back.variables):
            v = back[name].values.reshape(-1)
            f.write("%s %s %s\n" % (name, back[name].dtype.str,
                                     " ".join(repr(x.item()) for x in v)))
    return True


def write_hierarchy(out):
    """The Zarr V3 specification's example hierarchy, its documents
    written from the specification: groups / (no attributes), a, b (an
    attribute), arrays a/baz and a/foo (10000 x 1000 float64, chunks of
    1000 x 100, "/" keys, bytes + gzip, fill NaN), no chunk stored."""
    d = os.path.join(out, "zarr-v3-spec", "hierarchy.zarr")
    shutil.rmtree(os.path.dirname(d), ignore_errors=True)
    array = {"zarr_format": 3, "node_type": "array", "shape": [10000, 1000],
             "dimension_names": ["rows", "columns"], "data_type": "float64",
             "chunk_grid": {"name": "regular",
                            "configuration": {"chunk_shape": [1000, 100]}},
             "chunk_key_encoding": {"name": "default",
                                    "configuration": {"separator": "/"}},
             "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "gzip", "configuration": {"level": 1}}],
             "fill_value": "NaN",
             "attributes": {"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]}}
    nodes = {"": {"zarr_format": 3, "node_type": "group"},
             "a": {"zarr_format": 3, "node_type": "group"},
             "b": {"zarr_format": 3, "node_type": "group",
                   "attributes": {"test_key": "test_value"}},
             "a/baz": array, "a/foo": array}
    for path, doc in nodes.items():
        p = os.path.join(d, path)
        os.makedirs(p, exist_ok=True)
        with open(os.path.join(p, "zarr.json"), "w") as f:
            json.dump(doc, f, indent=2)


def write_kerchunk(out):
    """Reference files into one blob: version 1 with ranges, whole-file
    and inline (base64 and text) references, a template, and version 0."""
    d = os.path.join(out, "kerchunk")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "refs"))
    blob = bytearray()
    files = {}

    def put(b):
        off = len(blob)
        blob.extend(b)
        return off, len(b)

    def meta(shape, chunks, dtype, comp=None, fill=0):
        return json.dumps({"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
                           "compressor": comp, "fill_value": fill, "filters": None, "order": "C"})

    v = np.arange(12, dtype="<i4") * 3 - 5
    f = np.linspace(-2, 2, 8).astype("<f8")
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            "a/.zarray": meta([12], [5], "<i4"),
            "f/.zarray": meta([8], [4], "<f8", {"id": "zlib", "level": 5})}
    for i in range(3):
        o, n = put(v[i * 5:(i + 1) * 5].tobytes().ljust(20, b"\0"))
        refs["a/%d" % i] = ["{{u}}", o, n] if i != 1 else "base64:" + base64.b64encode(
            v[5:10].tobytes()).decode()
    z = numcodecs.Zlib(5)
    for i in range(2):
        o, n = put(z.encode(f[i * 4:(i + 1) * 4].tobytes()))
        refs["f/%d" % i] = ["{{u}}", o, n]
    av = [int(x) for x in v]
    expect = {"zarr_format": 2,
              "arrays": [{"path": "a", "shape": [12], "chunks": [5], "dtype": "<i4", "values": av},
                         {"path": "f", "shape": [8], "chunks": [4], "dtype": "<f8", **encode(f)}]}
    with open(os.path.join(d, "refs", "v1.json"), "w") as fp:
        json.dump({"version": 1, "templates": {"u": "blob.bin"}, "refs": refs}, fp)
    files["refs/v1.json"] = expect
    # the same without the template, and as version 0
    plain = {k: (["blob.bin"] + r[1:] if isinstance(r, list) else r) for k, r in refs.items()}
    with open(os.path.join(d, "refs", "v1_plain.json"), "w") as fp:
        json.dump({"version": 1, "refs": plain}, fp)
    files["refs/v1_plain.json"] = expect
    with open(os.path.join(d, "refs", "v0_same.json"), "w") as fp:
        json.dump(plain, fp)
    files["refs/v0_same.json"] = expect
    # a whole-file reference: a chunk file of its own
    with open(os.path.join(d, "refs", "chunk_c0"), "wb") as fp:
        fp.write(np.array([9, 8, 7], dtype="<i2").tobytes())
    with open(os.path.join(d, "refs", "whole.json"), "w") as fp:
        json.dump({"version": 1, "refs": {".zgroup": json.dumps({"zarr_format": 2}),
                                          "c/.zarray": meta([5], [3], "<i2", None, -1),
                                          "c/0": ["chunk_c0"]}}, fp)
    files["refs/whole.json"] = {"zarr_format": 2, "arrays": [
        {"path": "c", "shape": [5], "chunks": [3], "dtype": "<i2", "values": [9, 8, 7, -1, -1]}]}
    # version 0: the plain mapping, a missing chunk (fill 7), inline text
    r0 = {".zgroup": json.dumps({"zarr_format": 2}),
          "b/.zarray": meta([6], [2], "|u1", None, 7),
          "b/0": "\x01\x02",
          "b/2": ["blob.bin", put(bytes([5, 6]))[0], 2]}
    with open(os.path.join(d, "refs", "v0.json"), "w") as fp:
        json.dump(r0, fp)
    files["refs/v0.json"] = {"zarr_format": 2, "arrays": [
        {"path": "b", "shape": [6], "chunks": [2], "dtype": "|u1", "values": [1, 2, 7, 7, 5, 6]}]}
    with open(os.path.join(d, "refs", "blob.bin"), "wb") as fp:
        fp.write(blob)
    with open(os.path.join(d, "expected_refs.json"), "w") as fp:
        json.dump({"generator": "tests/writers/own_fixtures.py", "files": files}, fp, indent=0)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = len(write_v2(out))
    xr = write_xarray(out)
    write_hierarchy(out)
    write_kerchunk(out)  # last: expected_refs.json says the rest is there
    print("own_fixtures.py: %d V2 arrays, %s, the V3 example hierarchy, "
          "5 kerchunk reference files in %s" %
          (n, "an xarray store" if xr else "no xarray store (no python3-xarray)", out))


if __name__ == "__main__":
    main()
