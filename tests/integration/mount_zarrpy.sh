#!/bin/bash
# mount_zarrpy.sh - zarr-python (Debian's python3-zarr 2.13, Zarr V2 only)
# on each -o views placement. A V2 group written by zarr-python itself (an
# int32 array with half its chunks never written, a vlen-utf8 string
# array, both zstd) is mounted three times:
#   views=tree  the root is the store untouched: zarr-python's info
#               (nchunks_initialized, nbytes_stored, its whole `info` text
#               but the store type line) and every value equal what it
#               says of the store on disk; the text views are under .text/;
#   views=none  the same, and no .text/;
#   views=beside (the default) the values read equal, but zarr-python takes
#               the K.txt views for chunks: nchunks_initialized counts them
#               (the reason tree exists), checked so that the day it stops
#               counting them the README is corrected.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's: its zarr is python3-zarr
"$PY" -c 'import zarr, numcodecs, numpy' 2>/dev/null ||
  zt_skip_or_fail "no zarr-python for $PY (Debian package python3-zarr)"

SRC="$ZT_TMP/zp.zarr"
cat >"$ZT_TMP/zp.py" <<'EOF'
import json
import sys

import numcodecs
import numpy as np
import zarr


def write(d):
    g = zarr.open_group(d, mode="w")
    a = g.create_dataset("counts", shape=(1000, 30), chunks=(100, 10),
                         dtype="i4", compressor=numcodecs.Zstd(level=3),
                         fill_value=-1)
    a[:500] = np.arange(500 * 30, dtype="i4").reshape(500, 30)
    s = g.create_dataset("names", shape=(250,), chunks=(100,), dtype=object,
                         object_codec=numcodecs.VLenUTF8(),
                         compressor=numcodecs.Zstd(level=3))
    s[:] = np.array(["cell-%d \u00e9" % i for i in range(250)], dtype=object)


def describe(d):
    """What zarr-python says of each array: info, counts and a digest."""
    g = zarr.open_group(d, mode="r")
    out = {}
    for name in ("counts", "names"):
        a = g[name]
        info = [l for l in repr(a.info).splitlines()
                if not l.startswith("Store type")]
        v = a[...]
        out[name] = {
            "nchunks_initialized": a.nchunks_initialized,
            "nbytes_stored": a.nbytes_stored,
            "info": info,
            "values": v.tolist() if v.dtype == object else
            [int(x) for x in v.ravel()],
        }
    json.dump(out, sys.stdout, sort_keys=True, indent=1)


{"write": write, "describe": describe}[sys.argv[1]](sys.argv[2])
EOF
t "$PY" "$ZT_TMP/zp.py" write "$SRC" >"$ZT_TMP/write.log" 2>&1 ||
  zt_hard_error "zarr-python could not write the store: $(tail -3 "$ZT_TMP/write.log")"
t "$PY" "$ZT_TMP/zp.py" describe "$SRC" >"$ZT_TMP/disk.json" 2>"$ZT_TMP/py.err" ||
  zt_hard_error "zarr-python could not read the store: $(tail -3 "$ZT_TMP/py.err")"
grep -q '"nchunks_initialized": 15' "$ZT_TMP/disk.json" ||
  zt_hard_error "the store on disk is not what this test wrote (15 chunks of counts)"

M=$(zt_mkdir m)
# describe the mount at $1 into $2
describe() { t "$PY" "$ZT_TMP/zp.py" describe "$1" >"$2" 2>"$ZT_TMP/py.err"; }

for mode in tree none; do
  zmount "$SRC" "$M" -o views=$mode || finish
  if describe "$M" "$ZT_TMP/$mode.json"; then
    if cmp -s "$ZT_TMP/disk.json" "$ZT_TMP/$mode.json"; then
      pass "views=$mode: zarr-python's info, counts and values equal the store on disk's"
    else
      fail "views=$mode: zarr-python sees something else than on disk (< disk, > mount):"
      diff "$ZT_TMP/disk.json" "$ZT_TMP/$mode.json" | show
    fi
  else
    fail "views=$mode: zarr-python failed on the mount:"
    show "$ZT_TMP/py.err"
  fi
  # zarr-python's own listing of the root: exactly the store's keys
  keys=$(cd "$M" && find . -mindepth 1 -not -path './.text*' | sort | tr '\n' ' ')
  assert_eq "views=$mode: the root holds exactly the stored keys" \
    "$(cd "$SRC" && find . -mindepth 1 | sort | tr '\n' ' ')" "$keys"
  if [ $mode = tree ]; then
    assert_eq "views=tree: .text/counts/values.txt has every element" 30000 "$(wc -l <"$M/.text/counts/values.txt")"
    assert_eq "views=tree: .text/names/values.txt line 8" "cell-7 é" "$(sed -n 8p "$M/.text/names/values.txt")"
  else
    if [ -e "$M/.text" ]; then fail "views=none: there is a .text"; else pass "views=none: no .text"; fi
  fi
  zumount "$M"
done

zmount "$SRC" "$M" || finish
if describe "$M" "$ZT_TMP/beside.json"; then
  get() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d[sys.argv[2]][sys.argv[3]]))' "$@"; }
  assert_eq "views=beside: zarr-python reads the same values" \
    "$(get "$ZT_TMP/disk.json" counts values | md5sum)$(get "$ZT_TMP/disk.json" names values | md5sum)" \
    "$(get "$ZT_TMP/beside.json" counts values | md5sum)$(get "$ZT_TMP/beside.json" names values | md5sum)"
  assert_eq "views=beside: zarr-python counts the 15 K.txt views as chunks (docs/reference.md: use views=tree)" \
    30 "$(get "$ZT_TMP/beside.json" counts nchunks_initialized)"
else
  fail "views=beside: zarr-python failed on the mount:"
  show "$ZT_TMP/py.err"
fi
zumount "$M"
finish
