#!/bin/bash
# icechunk_writer.sh - the test Icechunk writer (tests/writers/icechunk_writer.py)
# checked against repositories written by Icechunk itself, and against itself.
#   fixtures   `dump` of each of the five repositories in
#              ../shared/fixtures/icechunk gives the facts of its EXPECTED.md
#              (refs, deleted tag, histories, trees, metadata, values of
#              every chunk stored in the repository, manifest counts); each
#              is then rewritten by the writer from `describe`, in spec 1
#              and spec 2, and `compare` finds the same content (ids, times,
#              sizes aside) and `verify` gives the description back;
#   round trip a description using every feature the writer has (native
#              chunks sharing a file, inline, virtual with an ETag or a
#              last-modified time, missing chunks, split manifests with
#              extents, odd node and tag names, a deleted tag, snapshot
#              metadata, configuration) written in spec 1 and 2, compressed
#              and not: `verify` gives it back, `dump` shows each feature;
#              and, spec 2 only, virtual locations compressed with the
#              manifest's zstd dictionary;
#   scale      a small scale repository read back ref by ref, then the
#              default one (10^6 refs, 100 manifests, 1,000 snapshots)
#              written in under a minute and its history read back.
# No mount: the writer's job is to produce repositories for the mount tests.
#
# ZARRFS_FIXTURES overrides the location (default
# $ZARRFS_SRCDIR/../shared/fixtures); absent fixtures skip that part (exit
# 77 at the end), or fail under CI=true. Needs Debian's python3 with
# python3-flatbuffers, python3-numpy and python3-zstandard (or zstd).
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's: its packages are python3-flatbuffers, ...
W="$ZARRFS_SRCDIR/tests/writers/icechunk_writer.py"
"$PY" -c 'import flatbuffers.flexbuffers, numpy' 2>/dev/null ||
  zt_skip_or_fail "no python3-flatbuffers/python3-numpy for $PY"
for tool in jq zstd; do
  command -v "$tool" >/dev/null || zt_skip_or_fail "no $tool"
done
iw() { "$PY" "$W" "$@"; }

# Runs a check; its output is shown when it fails.
check() {
  local what=$1
  shift
  if "$@" >"$ZT_TMP/check.out" 2>&1; then
    pass "$what"
  else
    fail "$what"
    show "$ZT_TMP/check.out"
  fi
}

# Each "PASS name" / "FAIL name: why" line of a facts run as one check.
facts() {
  local line
  "$PY" "$ZT_TMP/facts.py" "$@" >"$ZT_TMP/facts.out" 2>&1 ||
    echo "FAIL facts.py $*: exit $?" >>"$ZT_TMP/facts.out"
  while IFS= read -r line; do
    case $line in
    PASS*) pass "${line#PASS }" ;;
    *) fail "$line" ;;
    esac
  done <"$ZT_TMP/facts.out"
}

# ---- the facts of EXPECTED.md, from dump + describe ----

cat >"$ZT_TMP/facts.py" <<'EOF'
import json
import math
import struct
import subprocess
import sys

kind, name, dump_path, desc_path = sys.argv[1:5]
d = json.load(open(dump_path, encoding="utf-8"))
desc = json.load(open(desc_path, encoding="utf-8"))
snaps = {s["id"]: s for s in d["snapshots"]}
dsnaps = {s["id"]: s for s in desc["snapshots"]}


def check(what, ok, why=""):
    print("%s %s: %s%s" % ("PASS" if ok else "FAIL", name, what,
                           "" if ok else ": " + str(why)))


def at(ref):
    """The snapshot id a ref or a message names."""
    if ref in d["branches"]:
        return d["branches"][ref]
    if ref in d["tags"]:
        return d["tags"][ref]
    return next(s["id"] for s in d["snapshots"] if s["message"] == ref)


def node(sid, path):
    return next((n for n in snaps[sid]["nodes"] if n["path"] == path), None)


def inside(meta, index):
    """Which elements of a chunk (C order) lie inside the array: an edge
    chunk is stored whole, padded beyond the array's end."""
    shape = meta["shape"]
    cs = meta["chunk_grid"]["configuration"]["chunk_shape"]
    keep = [True]
    for d in range(len(shape)):
        keep = [k and index[d] * cs[d] + j < shape[d]
                for k in keep for j in range(cs[d])]
    return keep


def values(sid, path):
    """Decoded values inside the array of the chunks stored in the
    repository (bytes + zstd codecs only), by chunk index; virtual chunks
    are left out."""
    n = next(n for n in dsnaps[sid]["nodes"] if n["path"] == path)
    meta = json.loads(n["zarr_json"])
    fmt = {"float32": "f", "int8": "b"}[meta["data_type"]]
    out = {}
    for m in n["manifests"]:
        for c in m["chunks"]:
            raw = c.get("native") or c.get("inline")
            if raw is None:
                continue
            data = subprocess.run(["zstd", "-dc"], input=bytes.fromhex(raw),
                                  stdout=subprocess.PIPE, check=True).stdout
            vals = struct.unpack("<%d%s" % (
                len(data) // struct.calcsize(fmt), fmt), data)
            out[tuple(c["index"])] = [v for v, k in
                                      zip(vals, inside(meta, c["index"]))
                                      if k]
    return out


def all_equal(vals, want):
    return all(v == want for vs in vals.values() for v in vs)


GROUP_ATTRS = {"this": "is a nice group", "icechunk": 1, "size": 42.0}
ARRAY_ATTRS = {"this": "is a nice array", "icechunk": 1, "size": 42.0}
MAIN = ["set virtual chunk", "fill data", "empty structure",
        "Repository initialized"]
check("spec version", d["spec_version"] == (1 if name.endswith("v1") else 2),
      d["spec_version"])
roots = [s["id"] for s in d["snapshots"] if s["parent"] is None]
# the well-known first id: Icechunk 1.x repositories (and their migration)
# predate it, so only the spec 2 originals are held to it
check("one first snapshot", len(roots) == 1 and
      (name not in ("test-repo-v2", "split-repo-v2") or
       roots == ["1CECHNKREP0F1RSTCMT0"]), roots)
if kind == "test":
    check("branches", sorted(d["branches"]) == ["main", "my-branch"],
          d["branches"])
    check("tags", sorted(d["tags"]) == ["it also works!", "it works!"],
          d["tags"])
    check("deleted tag", d["deleted_tags"] == ["deleted"] and
          "deleted" not in d["tags"], d["deleted_tags"])
    lg = d["log"]
    check("log main", lg["branch.main"] == MAIN, lg["branch.main"])
    more = ["some more structure", "delete a chunk"] + MAIN
    check("log my-branch", lg["branch.my-branch"] == more)
    check("log it also works!", lg["tag.it also works!"] == more)
    check("log it works!", lg["tag.it works!"] == more[1:])
    tip = at("my-branch")
    paths = sorted(n["path"] for n in snaps[tip]["nodes"])
    check("tree", paths == ["/", "/group1", "/group1/big_chunks",
                            "/group1/small_chunks", "/group2",
                            "/group2/group3", "/group2/group3/group4",
                            "/group2/group3/group4/group5",
                            "/group2/group3/group4/group5/inner"], paths)
    check("root children", sorted(p for p in paths if p.count("/") == 1
                                  and p != "/") == ["/group1", "/group2"])
    for g in ("/group1", "/group2"):
        n = node(tip, g)
        check(g + " group attrs", n["type"] == "group" and
              n["user_data"]["attributes"] == GROUP_ATTRS)
    big = node(tip, "/group1/big_chunks")
    u = big["user_data"]
    check("big_chunks meta", big["type"] == "array" and
          u["data_type"] == "float32" and u["shape"] == [10, 10] and
          u["chunk_grid"]["configuration"]["chunk_shape"] == [5, 5] and
          u["fill_value"] == "NaN" and u["attributes"] == ARRAY_ATTRS, u)
    refs = [r for m in big["manifests"]
            for r in d["manifests"][m["id"]]["arrays"][big["node_id"]]]
    byidx = {tuple(r["index"]): r for r in refs}
    v = byidx.get((0, 0), {})
    check("big_chunks c/0/0 virtual", v.get("type") == "virtual" and
          v.get("location") == "s3://testbucket/can_read_old/chunk-1" and
          v.get("offset") == 0 and
          v.get("length") == byidx.get((0, 1), {}).get("length"), v)
    check("big_chunks native 0/1 1/0 1/1",
          sorted(k for k, r in byidx.items() if r["type"] == "native") ==
          [(0, 1), (1, 0), (1, 1)])
    vals = values(tip, "/group1/big_chunks")
    check("big_chunks values 42.0", len(vals) == 3 and
          all_equal(vals, 42.0) and all(len(x) == 25 for x in vals.values()))
    small = node(tip, "/group1/small_chunks")
    u = small["user_data"]
    check("small_chunks meta", u["data_type"] == "int8" and
          u["shape"] == [5] and u["fill_value"] == 8 and
          u["chunk_grid"]["configuration"]["chunk_shape"] == [1] and
          u["attributes"] == ARRAY_ATTRS, u)
    vals = values(tip, "/group1/small_chunks")
    check("small_chunks my-branch 84 84 84 84 (fill)",
          sorted(vals) == [(0,), (1,), (2,), (3,)] and all_equal(vals, 84))
    refs = [r for m in small["manifests"]
            for r in d["manifests"][m["id"]]["arrays"][small["node_id"]]]
    check("small_chunks inline", all(r["type"] == "inline" for r in refs))
    vals = values(at("main"), "/group1/small_chunks")
    check("small_chunks main 84 x5", len(vals) == 5 and all_equal(vals, 84))
    inner = node(tip, "/group2/group3/group4/group5/inner")
    u = inner["user_data"]
    check("inner empty", u["data_type"] == "float32" and
          u["shape"] == [10, 10] and u["fill_value"] == "NaN" and
          u["chunk_grid"]["configuration"]["chunk_shape"] == [5, 5] and
          inner["manifests"] == [], inner["manifests"])
else:
    check("refs", list(d["branches"]) == ["main"] and d["tags"] == {} and
          d["deleted_tags"] == [])
    want = ["write data again with more splits", "write data again",
            "write data", "empty structure", "Repository initialized"]
    check("log main", d["log"]["branch.main"] == want, d["log"])
    for msg, big, small, nman in (("main", 14.0, 3, 17),
                                  ("write data", 120.0, 0, 9),
                                  ("write data again", 12.0, 1, 9)):
        sid = at(msg)
        n = node(sid, "/group1/split")
        u = n["user_data"]
        check(msg + " split meta", u["data_type"] == "float32" and
              u["shape"] == [10, 10] and
              u["chunk_grid"]["configuration"]["chunk_shape"] == [3, 3] and
              u.get("dimension_names") == [None, "longitude"] and
              n.get("dimension_names") == [None, "longitude"], u)
        vals = values(sid, "/group1/split")
        check(msg + " split values %g" % big, len(vals) == 16 and
              all_equal(vals, big), sorted(vals))
        vals = values(sid, "/group1/small_chunks")
        check(msg + " small_chunks values %d" % small, len(vals) == 5 and
              all_equal(vals, small))
        check(msg + " %d manifest files" % nman,
              len(snaps[sid]["manifest_files"]) == nman,
              len(snaps[sid]["manifest_files"]))
        # split: extents of one array never overlap, and cover its refs
        seen = set()
        ok = True
        for m in n["manifests"]:
            for r in d["manifests"][m["id"]]["arrays"][n["node_id"]]:
                ok &= tuple(r["index"]) not in seen and all(
                    e[0] <= i < e[1] for i, e in zip(r["index"],
                                                     m["extents"]))
                seen.add(tuple(r["index"]))
        check(msg + " extents", ok and len(seen) == 16)
EOF

FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}/icechunk
if [ ! -f "$FIX/EXPECTED.md" ]; then
  zt_skip_part "Icechunk fixtures not found at $FIX"
else
  for r in test-repo-v1 test-repo-v2 test-repo-v2-migrated split-repo-v1 split-repo-v2; do
    out="$ZT_TMP/$r"
    if ! iw dump "$FIX/$r" >"$out.dump.json" 2>"$out.err" ||
      ! iw describe "$FIX/$r" >"$out.desc.json" 2>>"$out.err"; then
      fail "$r: dump/describe"
      show "$out.err"
      continue
    fi
    pass "$r: dump/describe"
    case $r in test-*) k="test" ;; *) k="split" ;; esac
    facts "$k" "$r" "$out.dump.json" "$out.desc.json"
    for spec in 1 2; do
      check "$r: written again in spec $spec" iw write "$out.$spec" --spec "$spec" "$out.desc.json"
      check "$r: spec $spec compare (ids, times aside)" iw compare --no-config "$FIX/$r" "$out.$spec"
      check "$r: spec $spec verify" iw verify "$out.$spec" "$out.desc.json"
    done
    # the repository Icechunk wrote and ours hold the same configuration
    spec=$(jq .spec_version "$out.dump.json")
    check "$r: spec $spec compare with configuration" iw compare "$FIX/$r" "$out.$spec"
  done
  # compare is not blind: two different repositories differ
  if iw compare --no-config "$FIX/test-repo-v2" "$FIX/split-repo-v2" >/dev/null 2>&1; then
    fail "compare test-repo-v2 split-repo-v2 found no difference"
  else
    pass "compare tells repositories apart"
  fi
fi

# ---- round trip of a description using every feature ----

cat >"$ZT_TMP/all.json" <<'EOF'
{
 "config": {"virtual_chunk_containers": {"s3://testbucket/": {"name": null,
   "url_prefix": "s3://testbucket/", "store": {"s3_compatible": {
   "region": "us-east-1", "endpoint_url": "http://localhost:4200",
   "anonymous": false, "allow_http": true, "force_path_style": true}}}}},
 "config_yaml": "virtual_chunk_containers:\n  s3:\n    name: s3\n    url_prefix: s3://testbucket\n    store: !s3_compatible\n      region: us-east-1\n      endpoint_url: http://localhost:4200\n      anonymous: false\n      allow_http: true\n      force_path_style: true\n",
 "snapshots": [
  {"id": "init", "parent": null, "message": "Repository initialized",
   "time": "2025-01-01T00:00:00Z", "nodes": []},
  {"id": "structure", "parent": "init", "message": "empty structure",
   "time": "2025-01-01T00:01:00.5Z", "metadata": {"author": "writer test"},
   "nodes": [
    {"path": "/", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {}}},
    {"path": "/g", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {"k": 1}}},
    {"path": "/g/odd name ü!", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {}}},
    {"path": "/g/a2d", "type": "array", "zarr": {"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}}, "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": -1, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "dimension_names": ["y", null], "attributes": {}}},
    {"path": "/g/virt", "type": "array", "zarr": {"zarr_format": 3, "node_type": "array", "shape": [12], "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}, "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "attributes": {}}},
    {"path": "/split", "type": "array", "zarr": {"zarr_format": 3, "node_type": "array", "shape": [12], "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 7, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "attributes": {}}}
   ]},
  {"id": "fill", "parent": "structure", "message": "fill data\nsecond line",
   "time": "2025-01-01T00:02:00Z",
   "nodes": [
    {"path": "/", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {}}},
    {"path": "/g", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {"k": 1}}},
    {"path": "/g/odd name ü!", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {}}},
    {"path": "/g/a2d", "type": "array", "zarr": {"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}}, "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": -1, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "dimension_names": ["y", null], "attributes": {}},
     "chunks": [
      {"index": [0, 0], "native": "000001000200030004000500", "file": "f1"},
      {"index": [0, 1], "native": "06000700080009000a000b00", "file": "f1"},
      {"index": [1, 0], "inline": "0c000d000e000f0010001100"}]},
    {"path": "/g/virt", "type": "array", "zarr": {"zarr_format": 3, "node_type": "array", "shape": [12], "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}, "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "attributes": {}},
     "chunks": [
      {"index": [0], "virtual": {"location": "s3://testbucket/a.bin", "offset": 0, "length": 8, "etag": "\"0123abc\""}},
      {"index": [1], "virtual": {"location": "s3://testbucket/dir/b.bin", "offset": 16, "length": 8, "last_modified": 1700000000}}]},
    {"path": "/split", "type": "array", "zarr": {"zarr_format": 3, "node_type": "array", "shape": [12], "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 7, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "attributes": {}},
     "manifests": [
      {"extents": [[0, 2]], "chunks": [{"index": [0], "native": "01000200"}, {"index": [1], "native": "03000400"}]},
      {"extents": [[2, 4]], "chunks": [{"index": [2], "native": "01000200"}]},
      {"extents": [[4, 6]], "chunks": [{"index": [5], "native": "0b000c00"}, {"index": [4], "native": "09000a00"}]}]}
   ]},
  {"id": "delete", "parent": "fill", "message": "delete a chunk",
   "time": 1735689780123456,
   "nodes": [
    {"path": "/", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {}}},
    {"path": "/g", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {"k": 1}}},
    {"path": "/g/odd name ü!", "type": "group", "zarr": {"zarr_format": 3, "node_type": "group", "attributes": {}}},
    {"path": "/g/a2d", "type": "array", "zarr": {"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}}, "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": -1, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "dimension_names": ["y", null], "attributes": {}},
     "chunks": [
      {"index": [0, 0], "native": "000001000200030004000500", "file": "f1"},
      {"index": [1, 0], "inline": "0c000d000e000f0010001100"}]},
    {"path": "/g/virt", "type": "array", "zarr": {"zarr_format": 3, "node_type": "array", "shape": [12], "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}, "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "attributes": {}},
     "chunks": [
      {"index": [0], "virtual": {"location": "s3://testbucket/a.bin", "offset": 0, "length": 8, "etag": "\"0123abc\""}},
      {"index": [1], "virtual": {"location": "s3://testbucket/dir/b.bin", "offset": 16, "length": 8, "last_modified": 1700000000}}]}
   ]}
 ],
 "branches": {"main": "fill", "feature-1": "delete"},
 "tags": {"it works!": "fill", "with space": "structure", "ünï çødé": "delete"},
 "deleted_tags": {"gone": "structure"}
}
EOF

for spec in 1 2; do
  for z in "" --uncompressed; do
    out="$ZT_TMP/all.$spec$z"
    what="round trip spec $spec${z:+ $z}"
    check "$what: write" iw write "$out" --spec "$spec" $z "$ZT_TMP/all.json"
    check "$what: verify" iw verify "$out" "$ZT_TMP/all.json"
  done
  out="$ZT_TMP/all.$spec"
  iw dump "$out" >"$out.json" 2>"$out.err" || {
    fail "round trip spec $spec: dump"
    show "$out.err"
  }
  j() { jq -e "$1" "$out.json" >/dev/null; }
  check "spec $spec: header" j ".spec_version == $spec"
  check "spec $spec: refs" j '(.branches | keys) == ["feature-1", "main"] and
    (.tags | keys) == ["it works!", "with space", "ünï çødé"] and .deleted_tags == ["gone"]'
  check "spec $spec: log" j '.log["branch.feature-1"] == ["delete a chunk",
    "fill data\nsecond line", "empty structure", "Repository initialized"] and
    .log["tag.with space"] == ["empty structure", "Repository initialized"]'
  check "spec $spec: first snapshot id and times" j '
    (.snapshots | map(select(.id == "1CECHNKREP0F1RSTCMT0")) | length) == 1 and
    ([.snapshots[].time] | sort) == ["2025-01-01T00:00:00.000000Z",
      "2025-01-01T00:01:00.500000Z", "2025-01-01T00:02:00.000000Z",
      "2025-01-01T00:03:00.123456Z"]'
  check "spec $spec: snapshot metadata" j \
    '[.snapshots[] | select(.message == "empty structure") | .metadata] == [{"author": "writer test"}]'
  check "spec $spec: two chunks in one file by offset" j '
    [.manifests[].arrays[][] | select(.type == "native" and .length == 12)] |
    (map(.chunk_id) | unique | length) == 1 and (map(.offset) | sort) == [0, 0, 12]'
  check "spec $spec: inline, virtual etag and last-modified" j '
    [.manifests[].arrays[][] | select(.type != "native")] | unique |
    map(del(.index)) | sort_by(.type, .location) == [
      {"type": "inline", "data_hex": "0c000d000e000f0010001100"},
      {"type": "virtual", "location": "s3://testbucket/a.bin", "offset": 0, "length": 8, "etag": "\"0123abc\""},
      {"type": "virtual", "location": "s3://testbucket/dir/b.bin", "offset": 16, "length": 8, "last_modified": 1700000000}]'
  check "spec $spec: split manifests with extents, missing chunk 3" j '
    [.snapshots[] | select(.message | startswith("fill")) | .nodes[] |
     select(.path == "/split") | .manifests[].extents] == [[[0, 2]], [[2, 4]], [[4, 6]]] and
    ([.manifests[].arrays[][] | select(.length == 4) | .index[0]] | sort) == [0, 1, 2, 4, 5]'
  # shellcheck disable=SC2016 # $m is jq's
  check "spec $spec: missing chunk a2d 1/1, deleted 0/1" j '
    [.snapshots[] | select(.message == "delete a chunk") | .nodes[] |
     select(.path == "/g/a2d") | .manifests[].id] as $m |
    [.manifests[$m[]].arrays[][] | .index] == [[0, 0], [1, 0]]'
  check "spec $spec: odd node name, dimension names" j '
    [.snapshots[] | select(.message == "delete a chunk") | .nodes[] |
     select(.path == "/g/odd name ü!" or .path == "/g/a2d") |
     .dimension_names] == [["y", null], null]'
  check "spec $spec: unchanged arrays keep their manifests" j '
    [.snapshots[] | select(.message != "empty structure" and .message != "Repository initialized") |
     .nodes[] | select(.path == "/g/virt") | .manifests[].id] | unique | length == 1'
done
# spec 2 only: virtual locations zstd-compressed with the manifest's
# dictionary (an array added to the snapshot "fill data")
jq '(.snapshots[] | select(.id == "fill") | .nodes) += [{"path": "/g/vz",
  "type": "array", "zarr": {"zarr_format": 3, "node_type": "array",
  "shape": [8], "data_type": "int16", "chunk_grid": {"name": "regular",
  "configuration": {"chunk_shape": [4]}}, "chunk_key_encoding": {"name": "default",
  "configuration": {"separator": "/"}}, "fill_value": 0, "codecs": [{"name": "bytes",
  "configuration": {"endian": "little"}}], "attributes": {}},
  "manifests": [{"compress_locations": true, "chunks": [
   {"index": [0], "virtual": {"location": "s3://testbucket/z/c0.bin", "offset": 0, "length": 8, "etag": "e0"}},
   {"index": [1], "virtual": {"location": "s3://testbucket/z/c1.bin", "offset": 8, "length": 8, "last_modified": 1600000000}}]}]}]' \
  "$ZT_TMP/all.json" >"$ZT_TMP/allz.json"
out="$ZT_TMP/allz"
check "compressed locations: write" iw write "$out" --spec 2 "$ZT_TMP/allz.json"
check "compressed locations: verify" iw verify "$out" "$ZT_TMP/allz.json"
iw dump "$out" >"$out.json" 2>"$out.err" || fail "compressed locations: dump"
check "compressed locations: dictionary and refs" jq -e '
  [.manifests[] | select(.location_dictionary_bytes > 0) |
   (.compression_algorithm == 1), (.arrays[][] | .location_compressed)] ==
  [true, true, true] and
  ([.manifests[].arrays[][] | select(.location_compressed) | .location] ==
   ["s3://testbucket/z/c0.bin", "s3://testbucket/z/c1.bin"])' "$out.json"
if iw write "$ZT_TMP/allz1" --spec 1 "$ZT_TMP/allz.json" >"$ZT_TMP/allz1.out" 2>&1; then
  fail "compressed locations in spec 1 not refused"
else
  pass "compressed locations in spec 1 refused"
fi
check "spec 2: configuration" jq -e '.config.virtual_chunk_containers["s3://testbucket/"].store.s3_compatible.endpoint_url == "http://localhost:4200"' "$ZT_TMP/all.2.json"
check "spec 1: config.yaml" grep -q 'url_prefix: s3://testbucket' "$ZT_TMP/all.1/config.yaml"
check "spec 1: tombstone" test -f "$ZT_TMP/all.1/refs/tag.gone/ref.json.deleted"
check "uncompressed: compression byte 0" \
  test "$(od -An -tu1 -j38 -N1 "$ZT_TMP/all.2--uncompressed/repo" | tr -d ' ')" = 0
check "compressed: compression byte 1" \
  test "$(od -An -tu1 -j38 -N1 "$ZT_TMP/all.2/repo" | tr -d ' ')" = 1

# a broken description is refused with a message, not a traceback
echo '{"snapshots": [{"id": "a", "parent": "nope"}], "branches": {}}' >"$ZT_TMP/bad.json"
if iw write "$ZT_TMP/bad" "$ZT_TMP/bad.json" >"$ZT_TMP/bad.out" 2>&1 ||
  ! grep -q '^icechunk_writer: ' "$ZT_TMP/bad.out"; then
  fail "bad description"
  show "$ZT_TMP/bad.out"
else
  pass "bad description refused"
fi

# ---- scale ----

for spec in 1 2; do
  out="$ZT_TMP/small.$spec"
  check "small scale spec $spec: write" iw scale "$out" --spec "$spec" -n 20000 -m 20 -s 30 -e 2
  iw dump "$out" >"$out.json" 2>"$out.err" || {
    fail "small scale spec $spec: dump"
    show "$out.err"
  }
  # chunk 12345 holds elements 24690 and 24691 (int32 little-endian)
  sha=$(printf '\x72\x60\x00\x00\x73\x60\x00\x00' | sha256sum | cut -d' ' -f1)
  # shellcheck disable=SC2016 # $sha is jq's
  check "small scale spec $spec: refs" jq -e --arg sha "$sha" '
    ([.manifests[].arrays[][]] | length) == 20000 and
    ([.manifests[].arrays[][] | .index[0]] | sort) == [range(0; 20000)] and
    ([.manifests[].arrays[][] | select(.index[0] == 12345) | .sha256] == [$sha]) and
    (.manifests | length) == 20 and (.snapshots | length) == 30 and
    (.log["branch.main"] | length) == 30 and (.log["tag.middle"][0]) == "commit 15" and
    (.branches.main as $t | [.snapshots[] | select(.id == $t) | .nodes[] |
      select(.type == "array") | .manifests[].extents[0]] |
      sort) == [range(0; 20) | [. * 1000, . * 1000 + 1000]]' "$out.json"
done
out="$ZT_TMP/big"
start=$(date +%s)
check "scale 10^6 refs, 100 manifests, 1,000 snapshots: write" iw scale "$out"
secs=$(($(date +%s) - start))
cp "$ZT_TMP/check.out" "$out.summary"
say "scale repository written in ${secs}s ($(du -sh "$out" | cut -f1))"
nfiles() { find "$1" -type f | wc -l; }
check "scale: files" test "$(nfiles "$out/snapshots") $(nfiles "$out/manifests") $(nfiles "$out/chunks")" = "1000 100 100"
iw dump --no-manifests "$out" >"$out.json" 2>"$out.err" || {
  fail "scale: dump --no-manifests"
  show "$out.err"
}
# shellcheck disable=SC2016 # $t is jq's
check "scale: history and manifest refs" jq -e '
  (.log["branch.main"] | length) == 1000 and
  (.branches.main as $t | [.snapshots[] | select(.id == $t) | .nodes[] |
    select(.type == "array") | .manifests[]] | length) == 100 and
  ([.snapshots[].manifest_files[].num_chunk_refs] | add) == 999000000' "$out.json"
# shellcheck disable=SC2016 # $main is jq's
check "scale: summary" jq -e --arg main "$(jq -r .branches.main "$out.json")" \
  '.main == $main and .refs == 1000000 and .array == "/scale/values"' "$out.summary"

finish
