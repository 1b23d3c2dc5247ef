#!/bin/bash
# mount_sizes.sh - exact sizes at any chunk count, through real mounts and
# real tools (issue 34 item 3), by results and bytes read (the daemon's
# /proc/PID/io rchar), never by time, on a kerchunk reference set of
# 70,000 chunks (more than a983859's 65,536: its values.txt was lazy, 0
# in stat), each a range of one data file as a netCDF file's chunks are:
#   1. a stat that may wait long enough gives the exact size;
#   2. one that may not wait (size_wait=0) gives 0, and asks again: a
#      `tail -n 1` (its seek to the end waits for the size) prints the
#      last line, and then stat gives the exact size;
#   3. the next mount over the same index: stat gives the exact size at
#      once, reading no chunk; `tail -n 1` reads the last chunks only;
#   4. a `cat` of a fresh mount that did not wait is the exact text.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || zt_skip_or_fail "no $PY"
N=70000
D=$(zt_mkdir stores)
IDX=$(zt_mkdir index)
MNT=$(zt_mkdir mnt)
# The reference set: chunk i of `a` holds one int32 (values of 1 to 10
# characters), at 4 i in data.bin; the expected text into want.txt.
if ! "$PY" - "$D" "$N" >"$ZT_TMP/mk.log" 2>&1 <<'EOF'; then
import json, struct, sys
d, n = sys.argv[1], int(sys.argv[2])
meta = {"zarr_format": 2, "shape": [n], "chunks": [1], "dtype": "<i4",
        "compressor": None, "filters": None, "fill_value": 0, "order": "C"}
refs = {".zgroup": json.dumps({"zarr_format": 2}), "a/.zarray": json.dumps(meta)}
vals = [((i * 2654435761) % 1000000007) // (1 + i % 7) - (i % 3) * 1000
        for i in range(n)]
with open(d + "/data.bin", "wb") as f:
    f.write(struct.pack("<%di" % n, *vals))
for i in range(n):
    refs["a/%d" % i] = ["data.bin", 4 * i, 4]
with open(d + "/refs.json", "w") as f:
    json.dump({"version": 1, "refs": refs}, f)
with open(d + "/want.txt", "w") as f:
    f.write("".join("%d\n" % v for v in vals))
EOF
  show "$ZT_TMP/mk.log"
  zt_hard_error "writing the reference set failed"
fi
want=$(stat -c %s "$D/want.txt")
last=$(tail -n 1 "$D/want.txt")
rchar() { zt_io_field "$ZT_PID" rchar; }

# ---- 1. a stat that may wait ----
zmount "$D/refs.json" "$MNT" -o index_cache=none -o size_wait=3600 || true
assert_eq "stat of 70,000 chunks (waiting)" "$want" \
  "$(t stat -c %s "$MNT/a/values.txt")"
zumount "$MNT"

# ---- 2. a stat that may not wait; then a tail ----
zmount "$D/refs.json" "$MNT" -o index_cache="$IDX" -o size_wait=0 || true
assert_eq "stat that may not wait: 0" 0 "$(t stat -c %s "$MNT/a/values.txt")"
assert_eq "tail -n 1 (its seek waits for the size)" "$last" \
  "$(t tail -n 1 "$MNT/a/values.txt")"
assert_eq "then stat: the exact size" "$want" \
  "$(t stat -c %s "$MNT/a/values.txt")"
zumount "$MNT"

# ---- 3. the next mount: the index's region record ----
zmount "$D/refs.json" "$MNT" -o index_cache="$IDX" -o size_wait=0 || true
r0=$(rchar)
assert_eq "next mount: stat exact at once" "$want" \
  "$(t stat -c %s "$MNT/a/values.txt")"
r1=$(rchar)
if [ $((r1 - r0)) -lt $((want / 4)) ]; then
  pass "next mount: stat read $((r1 - r0)) bytes (no chunk decoded)"
else
  fail "next mount: stat read $((r1 - r0)) bytes"
fi
assert_eq "next mount: tail -n 1" "$last" "$(t tail -n 1 "$MNT/a/values.txt")"
r2=$(rchar)
if [ $((r2 - r1)) -lt 65536 ]; then
  pass "next mount: tail read $((r2 - r1)) bytes"
else
  fail "next mount: tail read $((r2 - r1)) bytes"
fi
zumount "$MNT"

# ---- 4. a cat of a mount that did not wait ----
zmount "$D/refs.json" "$MNT" -o index_cache=none -o size_wait=0 || true
t cat "$MNT/a/values.txt" >"$ZT_TMP/got.txt"
assert_file_eq "cat of a view stat gave 0" "$D/want.txt" "$ZT_TMP/got.txt"
zumount "$MNT"

finish
