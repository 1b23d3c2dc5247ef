#!/usr/bin/python3
"""nc_compare.py - what a mount shows of a netCDF4 or HDF5 file, against
the file itself: every values.txt against the raw values (netCDF4 with
masking, scaling and char joining off for .nc, h5py for .h5), every
values.cf.txt (values.txt where there is none) and every column of every
table D.csv against xarray.open_dataset (netcdf4 engine for .nc, h5netcdf
with phony_dims="access" for .h5), written by the text rules of
cf_expect.py (times ISO 8601, floats shortest, masked numbers nan, masked
strings empty; in a table missing is empty and integral floats get .0).
For .nc every dimension of a 1-D variable must have its table, whose
columns are xarray's variables along it.

  /usr/bin/python3 tests/writers/nc_compare.py FILE DUMP LABEL [--zarr-fill]

--zarr-fill compares with the file as xarray's Zarr backend reads
kerchunk's (V2) references of it: an array's fill_value, HDF5's fill value
of the dataset, is its _FillValue, so an int variable without _FillValue
in the file masks netCDF's default fill and is float (open_as_zarr).

DUMP holds the mount's views as tests/integration/mount_xarray_nc.sh
dumps them: VAR.txt (values.cf.txt, else values.txt), VAR.raw.txt
(values.txt), D.csv. One line per check: PASS LABEL: ... or FAIL
LABEL: ..., with the number of values compared."""
import csv
import glob
import os
import sys
import warnings

import h5py
import netCDF4
import numpy as np
import xarray as xr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cf_expect import float_text, text  # noqa: E402  the text rules
from nc_refs import fill_of  # noqa: E402  kerchunk's fill_value

warnings.simplefilter("ignore")


def part_text(x, width):
    return float_text(float(x), width)


def value_text(v, dtype, csvfield=False):
    """xarray's value v as the mount writes it (csvfield: a D.csv field)."""
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, str):
        return v
    if isinstance(v, float) and np.isnan(v) and dtype.kind == "O":
        return "" if csvfield else "nan"  # a masked bool: NaN
    if dtype.kind == "c":
        w = np.float32 if dtype == np.complex64 else np.float64
        im = part_text(v.imag, w)
        s = part_text(v.real, w) + ("" if im.startswith("-") else "+") + im + "j"
        return "" if csvfield and np.isnan(v.real) else s
    if dtype.kind == "O" and isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if dtype.kind == "O" and not hasattr(v, "calendar"):
        return "" if csvfield else "nan"
    s = text(v, dtype)
    if csvfield and s in ("nan", "NaT"):
        return ""
    if csvfield and dtype.kind == "f" and s.lstrip("-").isdigit():
        return s + ".0"
    return s


def string_var(var):
    """Strings (or masked strings): xarray's NaN shows as an empty line."""
    return var.dtype.kind in "SU" or (
        var.dtype.kind == "O" and any(isinstance(x, (str, bytes))
                                      for x in var.values.ravel()))


def expected(var, csvfield=False):
    out = []
    for v in var.values.ravel():
        if string_var(var) and not isinstance(v, (str, bytes, np.bytes_)):
            out.append("")
        else:
            out.append(value_text(v, var.dtype, csvfield))
    return out


def open_as_zarr(path, engine, **kw):
    """path as xarray's Zarr backend reads kerchunk's references of it:
    the fill_value kerchunk gives an array (HDF5's fill value, which
    netCDF sets even without _FillValue) is its _FillValue."""
    ds = xr.open_dataset(path, engine=engine, decode_cf=False, **kw)
    with h5py.File(path, "r") as f:
        for v in ds.variables:
            d = f.get(v)
            if (isinstance(d, h5py.Dataset) and d.dtype.kind not in "SO"
                    and "_FillValue" not in ds[v].attrs
                    and fill_of(d) is not None):
                ds[v].attrs["_FillValue"] = d.fillvalue
    return xr.decode_cf(ds)


def check_xarray(name, dump, path, engine, columns, zarr_fill=False, **kw):
    """Each view dumped in dump against xarray (columns: and each table's
    columns are xarray's variables along its dimension, joined character
    arrays among them; zarr_fill: the file as xarray reads kerchunk's
    references of it, open_as_zarr)."""
    ds = (open_as_zarr if zarr_fill else xr.open_dataset)(path, engine=engine,
                                                          **kw)
    bad = n = 0
    for v in ds.variables:
        var = ds[v]
        want = expected(var)
        try:
            got = open(f"{dump}/{v}.txt", "rb").read().decode()
        except OSError:
            print(f"FAIL {name}: {v}: no text from the mount")
            bad += 1
            continue
        lines = got.split("\n")
        if lines[-1] != "" or lines[:-1] != want:
            print(f"FAIL {name}: {v}: mount {lines[:-1][:12]!r}, "
                  f"xarray {want[:12]!r}")
            bad += 1
        n += len(want)
    for path in sorted(glob.glob(f"{dump}/*.csv")):
        rows = list(csv.reader(open(path, newline="", encoding="utf-8")))
        head, body = rows[0], rows[1:]
        dim = path.split("/")[-1][:-4]
        along = sorted(v for v in ds.variables if ds[v].dims == (dim,))
        if columns and sorted(head) != along:
            print(f"FAIL {name}: {dim}.csv has the columns {head!r}, "
                  f"xarray the variables {along!r}")
            bad += 1
        for j, col in enumerate(head):
            var = ds[col]
            want = expected(var, csvfield=True)
            got = [r[j] if j < len(r) else "" for r in body]
            if got != want:
                print(f"FAIL {name}: {path.split('/')[-1]} column {col}: "
                      f"{got[:8]!r}, xarray {want[:8]!r}")
                bad += 1
            n += len(want)
    for dim in ds.dims if columns else ():
        if (any(ds[v].dims == (dim,) for v in ds.variables)
                and not os.path.exists(f"{dump}/{dim}.csv")):
            print(f"FAIL {name}: no table {dim}.csv")
            bad += 1
    if not bad:
        print(f"PASS {name}: every variable and table equals xarray's "
              f"({n} values)")



def raw_text(v, dtype):
    """A raw value as values.txt writes it: bytes in hex without trailing
    NULs, complex re+imj, bools true/false, numbers by the text rules."""
    if dtype.kind == "S":
        return bytes(v).rstrip(b"\0").hex()
    if dtype.kind == "O":
        return v.decode() if isinstance(v, bytes) else str(v)
    if dtype.kind == "c":
        w = np.float32 if dtype == np.complex64 else np.float64
        im = part_text(v.imag, w)
        return part_text(v.real, w) + ("" if im.startswith("-") else "+") + \
            im + "j"
    return text(v, dtype)


def raw_values(path):
    """{name: raw array} of every variable of path, as the HDF5 library
    reads it: netCDF4 (no masking, scaling or char joining) for netCDF
    files, h5py for other HDF5 files."""
    out = {}
    if path.endswith(".nc"):
        ds = netCDF4.Dataset(path)
        ds.set_auto_maskandscale(False)
        ds.set_auto_chartostring(False)
        for name, var in ds.variables.items():
            out[name] = np.asarray(var[...])
        ds.close()
    else:
        with h5py.File(path, "r") as f:
            f.visititems(lambda name, obj: out.__setitem__(name, obj[()])
                         if isinstance(obj, h5py.Dataset) else None)
    return out


def check_raw(name, dump, path):
    """Every values.txt of the dump against the file's raw values."""
    bad = n = 0
    raw = raw_values(path)
    for v, arr in sorted(raw.items()):
        if not os.path.exists(f"{dump}/{v}.raw.txt"):
            print(f"FAIL {name}: {v}: no values.txt from the mount")
            bad += 1
            continue
        lines = open(f"{dump}/{v}.raw.txt", "rb").read().decode().split("\n")
        want = [raw_text(x, arr.dtype) for x in np.asarray(arr).ravel()]
        if lines[-1] != "" or lines[:-1] != want:
            print(f"FAIL {name}: {v}: values.txt {lines[:-1][:12]!r}, raw "
                  f"{want[:12]!r}")
            bad += 1
        n += len(want)
    if not bad:
        print(f"PASS {name}: every values.txt equals the raw values "
              f"({n} values of {len(raw)} variables)")


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[4:] not in ([], ["--zarr-fill"]):
        sys.exit("usage: nc_compare.py FILE DUMP LABEL [--zarr-fill]")
    path, dump, label = sys.argv[1:4]
    zf = sys.argv[4:] == ["--zarr-fill"]
    check_raw(label + " (raw)", dump, path)
    if path.endswith(".nc"):
        check_xarray(label, dump, path, "netcdf4", True, zf)
    else:
        check_xarray(label, dump, path, "h5netcdf", False, zf,
                     phony_dims="access")
