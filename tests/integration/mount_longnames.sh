#!/bin/bash
# mount_longnames.sh - names no file system can hold (issue 32 item 12).
# The kernel fails a whole readdir reply over one name past its FUSE limit
# (EIO), and no tool can name anything past NAME_MAX (255 bytes): zarrfs
# leaves such names out of listings, with one log line per directory, and
# serves the rest; naming one answers ENAMETOOLONG.
#  1. a kerchunk reference file whose keys hold a 300-byte and a 5,000-byte
#     directory segment and a 5,000-byte file name at the root, and a
#     300-byte file name in group b: ls of / and of b list the other names
#     and succeed; values.txt beside them reads; one log line a directory,
#     not one more for a second ls; stat of a long name is "File name too
#     long";
#  2. an Icechunk repository (spec 2, written by
#     tests/writers/icechunk_writer.py) with tags of 300 and 5,000 bytes and
#     a group of 300: ls of /, /.zarrfs/tags and /.zarrfs/log list the
#     rest (skipped without python3-flatbuffers).
. "$(dirname "$0")/lib.sh"

# rep N CHAR: CHAR N times.
rep() { head -c "$1" /dev/zero | tr '\0' "$2"; }
L300=$(rep 300 n)
L5000=$(rep 5000 m)
F5000=$(rep 5000 f)
F300=$(rep 300 g)

# ls_is DESC EXPECTED DIR: ls -A of DIR, one line, must succeed.
ls_is() {
  local got
  if ! got=$(t ls -A "$3" 2>"$ZT_TMP/ls.err" | tr '\n' ' ' | sed 's/ $//'); then
    fail "$1: ls failed: $(head -1 "$ZT_TMP/ls.err")"
    return
  fi
  assert_eq "$1" "$2" "$got"
}
# too_long DESC PATH: stat of PATH must say the name is too long.
too_long() {
  if t stat "$2" >/dev/null 2>"$ZT_TMP/stat.err"; then
    fail "$1: stat succeeded"
  elif grep -q 'File name too long' "$ZT_TMP/stat.err"; then
    pass "$1"
  else
    fail "$1: $(head -1 "$ZT_TMP/stat.err")"
  fi
}

# ---- 1. kerchunk ----
Z='{\"zarr_format\":2}'
A='{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"<i4\",\"compressor\":null,\"filters\":null,\"fill_value\":0,\"order\":\"C\"}'
REFS="$ZT_TMP/long.json"
printf '{"version":1,"refs":{".zgroup":"%s","a/.zarray":"%s","a/0":"base64:AQAAAAIAAAA=","%s/.zgroup":"%s","%s/.zgroup":"%s","%s":"x","b/.zgroup":"%s","b/ok":"y","b/%s":"z"}}\n' \
  "$Z" "$A" "$L300" "$Z" "$L5000" "$Z" "$F5000" "$Z" "$F300" >"$REFS"
MNT=$(zt_mkdir mnt)
zmount "$REFS" "$MNT" || finish
ls_is "kerchunk: ls / leaves the long names out" ".zgroup a b info.txt" "$MNT"
ls_is "kerchunk: ls b leaves the long name out" ".zgroup info.txt ok" "$MNT/b"
assert_eq "kerchunk: the rest reads" "1 2" "$(t cat "$MNT/a/values.txt" | tr '\n' ' ' | sed 's/ $//')"
ls_is "kerchunk: ls / again" ".zgroup a b info.txt" "$MNT"
too_long "kerchunk: stat of a 300-byte directory" "$MNT/$L300"
too_long "kerchunk: stat of a 300-byte file" "$MNT/b/$F300"
assert_eq "kerchunk: one log line for /, naming 3 names" 1 \
  "$(grep -c ': /: 3 names longer than 255 bytes left out' "$ZT_LOG")"
assert_eq "kerchunk: one log line for b" 1 \
  "$(grep -c ': b: 1 name longer than 255 bytes left out' "$ZT_LOG")"
zumount "$MNT"

# ---- 2. Icechunk tags and nodes ----
PY=/usr/bin/python3
if "$PY" -c 'import flatbuffers.flexbuffers' 2>/dev/null; then
  cat >"$ZT_TMP/desc.py" <<EOF
import json
g = {"zarr_format": 3, "node_type": "group", "attributes": {}}
a = {"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int32",
     "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
     "chunk_key_encoding": {"name": "default",
                            "configuration": {"separator": "/"}},
     "fill_value": 0,
     "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}
nodes = [{"path": "/", "type": "group", "zarr": g},
         {"path": "/ok", "type": "array", "zarr": a,
          "chunks": [{"index": [0], "inline": "0100000002000000"}]},
         {"path": "/$L300", "type": "group", "zarr": g}]
print(json.dumps({"spec": 2,
                  "snapshots": [{"id": "s1", "parent": None,
                                 "message": "one", "nodes": nodes}],
                  "branches": {"main": "s1"},
                  "tags": {"ok": "s1", "$L300": "s1", "$L5000": "s1"}}))
EOF
  "$PY" "$ZT_TMP/desc.py" >"$ZT_TMP/desc.json" &&
    "$PY" "$ZARRFS_SRCDIR/tests/writers/icechunk_writer.py" write \
      "$ZT_TMP/repo" "$ZT_TMP/desc.json" --spec 2 >"$ZT_TMP/writer.log" 2>&1 ||
    zt_hard_error "icechunk_writer.py failed: $(tail -1 "$ZT_TMP/writer.log")"
  zmount "$ZT_TMP/repo" "$MNT" || finish
  ls_is "icechunk: ls / leaves the long group out" "info.txt ok zarr.json" "$MNT"
  ls_is "icechunk: ls tags leaves the long tags out" "ok" "$MNT/.zarrfs/tags"
  ls_is "icechunk: ls log leaves their logs out" "branch.main.txt tag.ok.txt" "$MNT/.zarrfs/log"
  assert_eq "icechunk: tag ok reads" "1 2" \
    "$(t cat "$MNT/.zarrfs/tags/ok/ok/values.txt" | tr '\n' ' ' | sed 's/ $//')"
  too_long "icechunk: stat of a 300-byte tag" "$MNT/.zarrfs/tags/$L300"
  assert_eq "icechunk: one log line for the tags" 1 \
    "$(grep -c ': .zarrfs/tags: 2 names longer than 255 bytes left out' "$ZT_LOG")"
  zumount "$MNT"
else
  zt_skip_part "no python3-flatbuffers for $PY: the Icechunk part"
fi

finish
