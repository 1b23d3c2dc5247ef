#!/bin/bash
# mount_utf8.sh - string chunks that hold bytes that are not UTF-8 (issue
# 32, item 7). xarray writes a dataset (a vlen-utf8 string variable and a
# number along one dimension, and a 2-D string variable), whose chunks are
# then patched in place with bytes that are not UTF-8 (the lengths kept);
# a zarrs.vlen array (uncompressed: sizes from its index alone, reads by
# range) is written beside it with such bytes too. On the mount:
#   - every text a tool reads is UTF-8: values.txt, each K.txt, rows.csv
#     and the group's D.csv decode strictly in Python, and pandas.read_csv
#     reads D.csv (each bad byte a '?', the rest as stored);
#   - sizes: stat of each view is what cat gives (the zarrs.vlen one from
#     its index alone, before any read), tail -c reads the end by range;
#   - the raw chunks are the stored bytes;
#   - the daemon logs one line per chunk with bad bytes, naming its key,
#     and none for the chunks without.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C

PY=/usr/bin/python3 # Debian's: python3-xarray, python3-zarr, python3-pandas
"$PY" -c 'import xarray, zarr, numpy, pandas' 2>/dev/null ||
  zt_skip_or_fail "no xarray for $PY (Debian package python3-xarray)"

SRC="$ZT_TMP/bad.zarr"
cat >"$ZT_TMP/bad.py" <<'EOF'
import json
import os
import struct
import sys

import numpy as np
import xarray as xr


def patch(path, old, new):
    """Replace bytes old by bytes new (same length) in a stored chunk."""
    assert len(old) == len(new)
    b = open(path, "rb").read()
    assert b.count(old) == 1, (path, old)
    open(path, "wb").write(b.replace(old, new))


def vlen_chunk(strings):
    """A zarrs.vlen chunk: u64 index length, u64 offsets, the bytes."""
    offs, data = [0], b""
    for s in strings:
        data += s
        offs.append(len(data))
    idx = struct.pack("<%dQ" % len(offs), *offs)
    return struct.pack("<Q", len(idx)) + idx + data


def write(d):
    n = 8
    names = np.array(["alpha", "b\u00e9ta", "gamma", "delta", "eps,ilon",
                      "zeta", "eta", "theta"], dtype=object)
    grid = np.array([["a", "bb"], ["XXc", "d"]], dtype=object)
    ds = xr.Dataset({"name": ("row", names),
                     "value": ("row", np.arange(n, dtype="i4")),
                     "grid": (("y", "x"), grid)})
    enc = {"name": {"chunks": (4,), "compressor": None},
           "value": {"chunks": (8,), "compressor": None},
           "grid": {"chunks": (2, 2), "compressor": None}}
    ds.to_zarr(d, mode="w", encoding=enc, consolidated=False)
    # chunk name/0: 'beta' with a lone continuation byte and a byte that
    # is never UTF-8; chunk name/1 stays valid; grid/0.0: a cut sequence
    patch(os.path.join(d, "name", "0"), "b\u00e9ta".encode(), b"b\x80\xffta")
    patch(os.path.join(d, "grid", "0.0"), b"XXc", b"\xe2\x82c")
    # a zarrs.vlen array of V3, two chunks, the second with bad bytes
    v = os.path.join(d, "v3")
    os.makedirs(os.path.join(v, "c"))
    meta = {"zarr_format": 3, "node_type": "array", "shape": [4],
            "data_type": "string", "fill_value": "",
            "chunk_grid": {"name": "regular",
                           "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"},
            "codecs": [{"name": "zarrs.vlen", "configuration": {
                "index_codecs": [{"name": "bytes",
                                  "configuration": {"endian": "little"}}],
                "data_codecs": [{"name": "bytes"}],
                "index_data_type": "uint64", "index_location": "start"}}]}
    open(os.path.join(v, "zarr.json"), "w").write(json.dumps(meta))
    open(os.path.join(v, "c", "0"), "wb").write(
        vlen_chunk(["\u00e9t\u00e9".encode(), b"x"]))
    open(os.path.join(v, "c", "1"), "wb").write(
        vlen_chunk([b"ok\xed\xa0\x80", b"\xf0\x9f\x98\x80\xf0\x9f"]))


def strict(paths):
    """Every file decodes as UTF-8."""
    for p in paths:
        open(p, "rb").read().decode("utf-8")


def table(path):
    import pandas as pd
    df = pd.read_csv(path)
    print(",".join(df["name"]))


{"write": write, "strict": lambda *p: strict(p), "table": table}[
    sys.argv[1]](*sys.argv[2:])
EOF
t "$PY" "$ZT_TMP/bad.py" write "$SRC" >"$ZT_TMP/write.log" 2>&1 ||
  zt_hard_error "could not write the store: $(tail -3 "$ZT_TMP/write.log")"

M=$(zt_mkdir m)
zmount "$SRC" "$M" || finish
# sizes first: the zarrs.vlen one from its index, before anything is read
assert_eq "v3/values.txt: stat before any read is the text's size" \
  "$(printf '\303\251t\303\251\nx\nok???\n\360\237\230\200??\n' | wc -c)" \
  "$(stat -c %s "$M/v3/values.txt")"
assert_eq "v3/values.txt: bad bytes as '?', the rest as stored" \
  "$(printf '\303\251t\303\251\nx\nok???\n\360\237\230\200??\n' | od -An -tx1)" \
  "$(t cat "$M/v3/values.txt" | od -An -tx1)"
assert_eq "v3/values.txt: tail -c 7 reads the end by range" \
  "$(printf '\360\237\230\200??\n' | od -An -tx1)" \
  "$(t tail -c 7 "$M/v3/values.txt" | od -An -tx1)"
assert_eq "name/values.txt: each bad byte a '?'" \
  "alpha b??ta gamma delta eps,ilon zeta eta theta" \
  "$(t cat "$M/name/values.txt" | tr '\n' ' ' | sed 's/ $//')"
assert_eq "grid/rows.csv: a cut sequence is '?' per byte, fields quoted as before" \
  "a,bb|??c,d" "$(t cat "$M/grid/rows.csv" | tr '\n' '|' | sed 's/|$//')"
views="$M/v3/values.txt $M/v3/c/0.txt $M/v3/c/1.txt $M/name/values.txt
  $M/name/0.txt $M/name/1.txt $M/grid/values.txt $M/grid/0.0.txt
  $M/grid/rows.csv $M/row.csv"
for v in $views; do
  assert_size_matches "${v#"$M"/}: stat size is what cat reads" "$v"
done
# shellcheck disable=SC2086 # one path a word
if out=$(t "$PY" "$ZT_TMP/bad.py" strict $views 2>&1); then
  pass "every view decodes as UTF-8 (Python, errors=strict)"
else
  fail "a view is not UTF-8: $(printf '%s' "$out" | tail -1)"
fi
assert_eq "pandas.read_csv reads row.csv, each bad byte a '?'" \
  "alpha,b??ta,gamma,delta,eps,ilon,zeta,eta,theta" \
  "$(t "$PY" "$ZT_TMP/bad.py" table "$M/row.csv" 2>&1)"
for k in name/0 grid/0.0 v3/c/1; do
  if cmp -s "$SRC/$k" "$M/$k"; then pass "raw $k: the stored bytes"; else
    fail "raw $k differs from the store"
  fi
done
zumount "$M"
for k in name/0 grid/0.0 v3/c/1; do
  assert_eq "one log line for $k" 1 \
    "$(grep -c ": $k: strings hold bytes that are not UTF-8" "$ZT_LOG")"
done
assert_eq "no log line for the chunks without bad bytes" 0 \
  "$(grep -cE ': (name/1|v3/c/0|value/0): ' "$ZT_LOG")"
finish
