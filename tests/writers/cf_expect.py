#!/usr/bin/python3
"""cf_expect.py - the expected text of the CF cases of tests/unit/text/check_cf.c
(times, durations, packed numbers, masks, booleans), computed by xarray's
own decode_cf (Debian 12: xarray 2023.01, numpy 1.24,
pandas 1.5, cftime 1.6), written as the C table check_cf.c embeds.

Run once when the cases change:
    /usr/bin/python3 tests/writers/cf_expect.py > tests/unit/text/check_cf_table.h
Each case: a storage dtype, the attributes as they come out of .zattrs /
zarr.json (JSON text), the array's fill_value as xarray's Zarr backend reads
it as _FillValue (JSON text or None), and the stored values. Every value is
decoded by xarray in an array of its own (xarray chooses pandas or cftime
per array; zarrfs per value), then written by the zarrfs text rules."""
import json
import warnings

import numpy as np
import xarray as xr

warnings.simplefilter("ignore")

CASES = [
    # (name, dtype, attrs json, fill_value json or None, [values])
    ("int16 packed", "int16",
     '{"scale_factor": 0.01, "add_offset": 10.0, "_FillValue": -32768}', None,
     [-32768, 0, 862, 1, -1, 32767, -32767, 5000]),
    ("int16 scale only", "int16", '{"scale_factor": 0.1}', None,
     [0, 1, 3, 186, -7, 32767]),
    ("int16 offset only", "int16", '{"add_offset": 273.15}', None,
     [0, 1, -273, 100]),
    ("int16 fill from metadata", "int16", '{"scale_factor": 0.5}', "-1",
     [-1, 0, 3]),
    ("int32 packed", "int32",
     '{"scale_factor": 0.001, "add_offset": -5, "_FillValue": -2147483647}', None,
     [-2147483647, 0, 123456, 2147483647]),
    ("uint8 missing list", "uint8",
     '{"missing_value": [254, 255], "scale_factor": 0.2}', None,
     [0, 1, 253, 254, 255, 128]),
    ("uint8 missing scalar no scale", "uint8", '{"missing_value": 0}', None,
     [0, 1, 200]),
    ("int8 fill no scale", "int8", '{"_FillValue": -128}', None, [-128, 5, 127]),
    ("int64 fill", "int64", '{"_FillValue": -9999}', None,
     [-9999, 9007199254740993, 1]),
    ("uint16 scale offset", "uint16",
     '{"scale_factor": 0.0025, "add_offset": 100.0}', None, [0, 65535, 1234]),
    ("float32 fill NaN", "float32", '{"_FillValue": "NaN"}', None,
     [1.5, float("nan"), 0.1, -2.0]),
    ("float32 fill 1e20", "float32", '{"_FillValue": 1e20}', None,
     [1e20, 18.62, 3.4028234663852886e38]),
    ("float32 scaled", "float32", '{"scale_factor": 0.1, "add_offset": 1}', None,
     [0.1, 1.0, 333.0]),
    ("float64 fill and missing", "float64",
     '{"_FillValue": -999.0, "missing_value": -998.0, "scale_factor": 2}', None,
     [-999.0, -998.0, 0.1, 1e300]),
    ("float64 valid range not applied", "float64",
     '{"valid_min": 0, "valid_max": 10, "valid_range": [0, 10]}', "-1",
     [-5.0, 20.0, -1.0]),
    ("float32 int scale, wide int offset", "float32",
     '{"scale_factor": 3, "add_offset": 100000}', None, [0.1, 1.7, -33.3]),
    ("float32 wide int scale", "float32", '{"scale_factor": 70000}', None,
     [0.1, 1.7]),
    ("float32 microseconds", "float32",
     '{"units": "microseconds since 2000-01-01"}', None, [1.5, 1000000.5, 0.1]),
    ("float32 seconds", "float32", '{"units": "seconds since 2000-01-01"}', None,
     [1.5, 0.1, 100000.1]),
    ("attributes as one-element lists", "int16",
     '{"scale_factor": [0.25], "add_offset": [1.5], "_FillValue": [-1]}', None,
     [-1, 0, 4, 7]),
    ("int scale on int16", "int16", '{"scale_factor": 2}', None, [3, -32768]),
    ("float64 missing NaN and fill", "float64",
     '{"missing_value": "NaN", "_FillValue": 9.96921e36}', None,
     [9.96921e36, float("nan"), 1.25]),
    ("uint64 fill", "uint64", '{"_FillValue": 7}', None,
     [7, 18446744073709551615, 0]),
    ("capital units", "int32", '{"units": "Days since 2000-01-01T00:00:00Z"}', None,
     [1]),
    ("fractional reference", "int32",
     '{"units": "seconds since 2000-01-01 00:00:00.5"}', None, [0, 1, -1]),
    ("reference with T and no seconds", "int32",
     '{"units": "hours since 1999-12-31T18:00"}', None, [6]),
    ("_Unsigned true", "int8",
     '{"_Unsigned": "true", "_FillValue": -1, "scale_factor": 0.5}', None,
     [-1, -2, 5, -128]),
    ("_Unsigned true, missing_value not cast", "int16",
     '{"_Unsigned": "true", "missing_value": -1}', None, [-1, -2, 7]),
    ("_Unsigned false", "uint16", '{"_Unsigned": "false", "_FillValue": 65535}',
     None, [65535, 65534, 1]),
    ("_Unsigned true alone", "int32", '{"_Unsigned": "true"}', None,
     [-1, 5]),
    ("bool flag", "int8", '{"dtype": "bool"}', None, [0, 1, 2, -1]),
    ("bool with fill", "int8", '{"dtype": "bool", "_FillValue": -1}', None,
     [0, 1, -1]),
    ("days standard", "int64", '{"units": "days since 2000-01-01", "calendar": "standard"}',
     None, [0, 1, 59, 60, 366, -1, -730120, -146000]),
    ("hours gregorian", "int32", '{"units": "hours since 2021-03-01 00:00:00", "calendar": "gregorian"}',
     None, [0, 6, 12, -6, 8760]),
    ("no calendar", "int64", '{"units": "minutes since 1970-01-01T00:00:00Z"}', None,
     [0, 1, 1440, 27000000]),
    ("standard 1582 gap", "int64", '{"units": "days since 1582-10-04", "calendar": "standard"}',
     None, [0, 1, 2, -1, -366, 365]),
    ("standard before 1582", "int64", '{"units": "days since 1500-02-28", "calendar": "standard"}',
     None, [0, 1, 2, 365, 36500]),
    ("proleptic before 1582", "int64",
     '{"units": "days since 1582-10-04", "calendar": "proleptic_gregorian"}', None,
     [0, 1, 11, -365]),
    ("proleptic huge", "int64",
     '{"units": "days since 2000-01-01", "calendar": "proleptic_gregorian"}', None,
     [100000000, -730119, -730120, -800000]),
    ("standard huge", "int64", '{"units": "days since 2000-01-01"}', None,
     [100000000, -730119, -730120, -800000, 3000000]),
    ("noleap", "int32", '{"units": "days since 2000-01-01", "calendar": "noleap"}', None,
     [0, 58, 59, 365, -1, 730, -730000]),
    ("365_day", "int32", '{"units": "days since 2001-03-01", "calendar": "365_day"}', None,
     [0, -1, 365]),
    ("all_leap", "int32", '{"units": "days since 2001-02-28", "calendar": "all_leap"}', None,
     [0, 1, 2, 366]),
    ("366_day", "int32", '{"units": "days since 2001-01-01", "calendar": "366_day"}', None,
     [59, 365]),
    ("360_day", "int32", '{"units": "days since 2000-01-01", "calendar": "360_day"}', None,
     [0, 29, 30, 59, 359, 360, -1, -730500]),
    ("360_day hours", "float64", '{"units": "hours since 2001-02-29 12:00", "calendar": "360_day"}', None,
     [0.0, 12.0, 36.5, -24.25]),
    ("julian", "int32", '{"units": "days since 2000-01-01", "calendar": "julian"}', None,
     [0, 59, 60, 366, -730500, 13]),
    ("seconds float", "float64", '{"units": "seconds since 2000-01-01 00:00:00"}', None,
     [0.5, 0.001, 1e-6, 1.000001, -0.25, 86399.999999, float("nan")]),
    ("hours float", "float64", '{"units": "hours since 1900-01-01"}', None,
     [0.1, 1/3, 876600.5, -0.1]),
    ("milliseconds", "int64", '{"units": "milliseconds since 2020-02-28 23:59:59"}', None,
     [0, 1, 1000, 86400001, -1]),
    ("microseconds", "int64", '{"units": "microseconds since 2020-01-01"}', None,
     [1, 999999, 1000001, -1]),
    ("abbreviated units", "int32", '{"units": "hrs since 2000-1-1"}', None, [0, 25]),
    ("abbreviated secs", "int32", '{"units": "secs since 2000-01-01 00:00"}', None, [0, 61]),
    ("singular day", "int32", '{"units": "day since 2000-01-01"}', None, [0, 1]),
    ("timezone +05:30", "int32", '{"units": "hours since 2000-01-01 00:00:00 +05:30"}', None,
     [0, 6]),
    ("timezone -0130", "int32", '{"units": "minutes since 2000-01-01 00:00 -0130"}', None,
     [0, 1]),
    ("time fill NaT", "int32", '{"units": "days since 2000-01-01", "_FillValue": -1}', None,
     [-1, 0, 3]),
    ("packed time", "int16",
     '{"units": "days since 2000-01-01", "scale_factor": 0.5, "_FillValue": -32768}', None,
     [-32768, 3, 1]),
    ("time out of ns range float", "float64", '{"units": "days since 1000-01-01"}', None,
     [0.5, 1.25, 400000.75]),
    ("timedelta hours", "int32", '{"units": "hours"}', None,
     [0, 1, 26, -3, 2562047, -2562047]),
    ("timedelta days", "int64", '{"units": "days"}', None,
     [0, 1, -1, 106751, -106751, 7]),
    ("timedelta seconds float", "float64", '{"units": "seconds"}', None,
     [1.5, 0.1, -0.25, 1e-10, float("nan"), 86400.000000001,
      123456789.123456789, -0.0, 5e-10, 1.0000000015]),
    ("timedelta milliseconds as xarray writes", "float64",
     '{"units": "milliseconds"}', '"NaN"',
     [93600000.0, float("nan"), 1500.0, -10800000.0, 0.0004, 1.0005]),
    ("timedelta minutes float32", "float32", '{"units": "minutes"}', None,
     [0.1, 1.5, -2.75, 100000.3]),
    ("timedelta microseconds", "int64", '{"units": "microseconds"}', None,
     [1, -1, 86400000001, 3723004005]),
    ("timedelta microseconds float", "float64", '{"units": "microseconds"}', None,
     [1.0005, 2.5, -0.0004]),
    ("timedelta nanoseconds float", "float64", '{"units": "nanoseconds"}', None,
     [1.9, -1.9, 1e15]),
    ("timedelta days float", "float64", '{"units": "days"}', None,
     [0.5, 1 / 3, -1.25, 1e-9, 36500.1]),
    ("timedelta packed hours", "int16",
     '{"units": "hours", "scale_factor": 0.5, "_FillValue": -1}', None,
     [-1, 3, 7, 32767]),
    ("timedelta fill from metadata", "int64", '{"units": "seconds"}', "-9999",
     [-9999, 90061]),
    ("timedelta with dtype attribute", "int64",
     '{"units": "seconds", "dtype": "timedelta64[s]"}', None, [3661, 0, -59]),
    # issue 32: units as xarray 2023.01 reads them (pandas, then cftime)
    ("nanoseconds since", "int64", '{"units": "nanoseconds since 2000-01-01"}',
     None, [0, 1, -1, 86400000000123, 4611686018427387904]),
    ("nanoseconds since float", "float64",
     '{"units": "nanoseconds since 2000-01-01"}', None, [1.7, -1.2, 1e15]),
    ("nanosecond proleptic", "int64",
     '{"units": "NANOSECOND since 1970-01-01", "calendar": "proleptic_gregorian"}',
     None, [5, -5]),
    ("cftime abbreviation d", "int32", '{"units": "d since 2000-01-01"}', None,
     [0, 1, -1, 366]),
    ("cftime abbreviation D noleap", "int32",
     '{"units": "D since 2000-01-01", "calendar": "noleap"}', None, [59, 365]),
    ("cftime abbreviation h", "int32", '{"units": "h since 2000-01-01"}', None,
     [1, 25]),
    ("cftime abbreviation hr", "float64", '{"units": "hr since 2000-01-01"}',
     None, [0.5, -1.25]),
    ("cftime abbreviation min", "int64", '{"units": "min since 2000-01-01"}',
     None, [1, 1441]),
    ("cftime abbreviation ms", "int64", '{"units": "ms since 2000-01-01"}', None,
     [1, 1500, -1]),
    ("cftime abbreviation s", "float32", '{"units": "s since 2000-01-01"}', None,
     [1.5, 0.1]),
    ("cftime abbreviation sec", "int32",
     '{"units": "sec since 2000-01-01", "calendar": "julian"}', None, [61]),
    ("cftime abbreviation secs", "int32", '{"units": "secs since 1990-06-30"}',
     None, [86401]),
    ("months in 360_day", "float64",
     '{"units": "months since 2000-01-01", "calendar": "360_day"}', None,
     [1, 13, 1.5, -1, 0.25]),
    ("common_years in noleap", "int32",
     '{"units": "common_years since 2000-01-01", "calendar": "noleap"}', None,
     [1, 2, -3]),
    ("common_years in 365_day", "float64",
     '{"units": "Common_Years since 2000-03-01", "calendar": "365_day"}', None,
     [0.5]),
    ("capitalised unit is no timedelta", "int32",
     '{"units": "Hours", "scale_factor": 2}', None, [3]),
    ("singular unit is no timedelta", "int32",
     '{"units": "hour", "add_offset": 1}', None, [3]),
]


def float_text(x, width):
    """The text contract's float rule: shortest digits at the width,
    plain for a decimal exponent in [-4, 16), else d.ddde+XX."""
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "-0" if np.signbit(x) else "0"
    s = np.format_float_scientific(np.dtype(width).type(x), unique=True)
    mant, exp = s.split("e")
    exp = int(exp)
    neg = mant.startswith("-")
    digits = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    if -4 <= exp < 16:
        if exp >= 0:
            ip = digits[: exp + 1].ljust(exp + 1, "0")
            fp = digits[exp + 1:]
        else:
            ip = "0"
            fp = "0" * (-exp - 1) + digits
        t = ip + ("." + fp if fp else "")
    else:
        t = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        t += "e%s%02d" % ("-" if exp < 0 else "+", abs(exp))
    return ("-" if neg else "") + t


def frac_text(ns):
    return ("." + ("%09d" % ns).rstrip("0")) if ns else ""


def time_text(y, mo, d, h, mi, s, ns):
    ys = ("-%04d" % -y) if y < 0 else "%04d" % y
    return "%s-%02d-%02dT%02d:%02d:%02d%s" % (ys, mo, d, h, mi, s, frac_text(ns))


def duration_text(ns):
    """The text contract's timedelta rule for a count of nanoseconds:
    ISO 8601, days then a time part without its zero fields."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    days, rem = divmod(ns, 86400 * 10**9)
    hours, rem = divmod(rem, 3600 * 10**9)
    mins, rem = divmod(rem, 60 * 10**9)
    secs, frac = divmod(rem, 10**9)
    out = sign + "P" + ("%dD" % days if days else "")
    if not (hours or mins or secs or frac):
        return out + ("" if days else "T0S")
    out += "T" + ("%dH" % hours if hours else "") + ("%dM" % mins if mins else "")
    if secs or frac:
        out += "%d%sS" % (secs, frac_text(frac))
    return out


def text(v, dtype):
    if isinstance(v, np.timedelta64) or (hasattr(v, "dtype") and v.dtype.kind == "m"):
        if np.isnat(v):
            return "NaT"
        return duration_text(int(v.astype("timedelta64[ns]").astype(np.int64)))
    if isinstance(v, np.datetime64) or (hasattr(v, "dtype") and v.dtype.kind == "M"):
        if np.isnat(v):
            return "NaT"
        s = np.datetime_as_string(v, unit="ns")
        date, tod = s.split("T")
        neg = date.startswith("-")
        y, mo, d = date.lstrip("-").split("-")
        hms, ns = tod.split(".")
        h, mi, sec = hms.split(":")
        return time_text(-int(y) if neg else int(y), int(mo), int(d), int(h),
                         int(mi), int(sec), int(ns))
    if hasattr(v, "calendar"):  # cftime
        return time_text(v.year, v.month, v.day, v.hour, v.minute, v.second,
                         v.microsecond * 1000)
    if v is None:
        return "NaT"
    if dtype == bool or isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if dtype.kind in "iu":
        return str(int(v))
    return float_text(float(v), dtype)


def decode(dtype, attrs, fill, value):
    a = json.loads(attrs)
    if fill is not None and "_FillValue" not in a:
        a["_FillValue"] = json.loads(fill)
    for k, v in list(a.items()):
        if v == "NaN":
            a[k] = float("nan")
    data = np.array([value], dtype=dtype)
    ds = xr.Dataset({"v": xr.Variable(("x",), data, attrs=a)})
    out = xr.decode_cf(ds)["v"]
    val = out.values[0]
    return text(val, out.dtype)


def c_str(s):
    return json.dumps(s)


def main():
    print("/* check_cf_table.h - generated by tests/writers/cf_expect.py from")
    print(" * xarray's decode_cf; do not edit. {name, dtype, attrs, fill_value,")
    print(" * stored value, expected text}. */")
    for name, dtype, attrs, fill, values in CASES:
        for v in values:
            exp = decode(dtype, attrs, fill, v)
            vs = repr(float(v)) if np.dtype(dtype).kind == "f" else str(int(v))
            print("{%s, %s, %s, %s, %s, %s}," % (
                c_str(name), c_str(dtype), c_str(attrs),
                c_str(fill) if fill is not None else "NULL", c_str(vs),
                c_str(exp)))


if __name__ == "__main__":
    main()
