#!/usr/bin/python3
"""nc_files.py - the netCDF4 and HDF5 files that tests/integration/
mount_xarray_nc.sh reads through every reference form, written with
Debian's netCDF4 and h5py:
  cf.nc (netCDF4): times with bounds, character arrays, a packed int16,
    an int8 bool flag with a fill value;
  h5.h5 (h5py): no dimension scales (phony_dim_N), a bool, a complex64
    and an |S5 each masked by _FillValue;
  vlen.nc (netCDF4): variable-length strings.

  /usr/bin/python3 tests/writers/nc_files.py OUTDIR [cf|h5|vlen ...]

cf.nc and h5.h5 are also kept in tests/data/nc-refs/ beside their Parquet
references (nc_refs.py parquet): the test checks that this script still
writes what they hold."""
import sys

import h5py
import netCDF4
import numpy as np


def chars(strings, n):
    """An S1 array of the strings, each padded with NULs to n bytes."""
    return np.array(strings, dtype="S%d" % n).view("S1").reshape(
        len(strings), n)


def write_cf(out):
    """cf.nc: CF times, bounds, characters, packing, a bool flag."""
    ds = netCDF4.Dataset(out + "/cf.nc", "w", format="NETCDF4")
    for name, size in (("time", 4), ("nv", 2), ("station", 3), ("name_strlen", 8),
                       ("code_len", 4), ("day", 3), ("lab_len", 4)):
        ds.createDimension(name, size)
    t = ds.createVariable("time", "f8", ("time",))
    t.units, t.calendar, t.bounds = "hours since 2020-01-01", "noleap", "time_bnds"
    t[:] = [0, 6, 12, 18]
    tb = ds.createVariable("time_bnds", "f8", ("time", "nv"))
    tb[:] = [[-3, 3], [3, 9], [9, 15], [15, 21]]
    d = ds.createVariable("day", "i4", ("day",))
    d.units, d.bounds = "days since 1999-12-31 12:00", "day_bnds"
    d[:] = [0, 1, 2]
    db = ds.createVariable("day_bnds", "i4", ("day", "nv"))
    db.calendar = "julian"
    db[:] = [[0, 1], [1, 2], [2, 3]]
    sn = ds.createVariable("station_name", "S1", ("station", "name_strlen"))
    sn[:] = chars(["Zürich".encode(), b"", b"Trondhei"], 8)
    sn._Encoding = "utf-8"
    code = ds.createVariable("code", "S1", ("station", "code_len"))
    code[:] = chars([b"AB", b"CDEF", b"a\x00b"], 4)
    lab = ds.createVariable("label", "S1", ("time", "station", "lab_len"))
    lab[:] = chars([b"t%ds%d" % (i, j) for i in range(4) for j in range(3)],
                   4).reshape(4, 3, 4)
    flag = ds.createVariable("flag", "S1", ("time",))
    flag[:] = np.array([b"a", b"b", b"", b"c"], dtype="S1")
    temp = ds.createVariable("temp", "i2", ("time", "station"), fill_value=-32767)
    temp.scale_factor, temp.add_offset = 0.1, 20.0
    temp[:] = np.ma.masked_equal(
        np.array([[1, 2, 3], [4, -32767, 6], [7, 8, 9], [-5, 0, 250]], "i2"),
        -32767)
    ok = ds.createVariable("ok", "i1", ("time",), fill_value=-1)
    ok.setncattr("dtype", "bool")
    ok[:] = np.ma.masked_equal(np.array([1, 0, -1, 1], "i1"), -1)
    ds.close()


def write_h5(out):
    """h5.h5: plain HDF5 datasets (phony dimensions), masked by _FillValue."""
    with h5py.File(out + "/h5.h5", "w") as f:
        f.create_dataset("data", data=np.arange(18, dtype="f4").reshape(6, 3))
        f.create_dataset("lat", data=np.array([-45.0, -15, 15, 45]))
        f.create_dataset("lon", data=np.array([0, 90, 180, 270], "i2"))
        f.create_dataset("time", data=np.arange(6, dtype="i4") * 10)
        b = f.create_dataset("flags", data=np.array([True, False, True, False]))
        b.attrs["_FillValue"] = np.bool_(False)
        z = f.create_dataset("z", data=np.array([1 + 2j, 0, 3.5 - 1j, 0], "c8"))
        z.attrs["_FillValue"] = np.complex64(0)
        s = f.create_dataset("s5", data=np.array([b"abc", b"", b"hello", b"x"],
                                                 "S5"))
        s.attrs["_FillValue"] = np.bytes_(b"x")


def write_vlen(out):
    """vlen.nc: variable-length strings (HDF5's global heap)."""
    ds = netCDF4.Dataset(out + "/vlen.nc", "w", format="NETCDF4")
    ds.createDimension("n", 10)
    v = ds.createVariable("names", str, ("n",), chunksizes=(10,))
    for i, s in enumerate(["hello", "", "a", "bb", "héllo", "x" * 20, "", "z",
                           "q", "r"]):
        v[i] = s
    ds.close()


if __name__ == "__main__":
    WRITERS = {"cf": write_cf, "h5": write_h5, "vlen": write_vlen}
    if len(sys.argv) < 2 or not set(sys.argv[2:]) <= set(WRITERS):
        sys.exit("usage: nc_files.py OUTDIR [cf|h5|vlen ...]")
    for name in sys.argv[2:] or WRITERS:
        WRITERS[name](sys.argv[1])
