#!/bin/bash
# mount_hier.sh - hierarchies through the real daemon: the Zarr V3
# specification's example hierarchy (written by tests/writers/own_fixtures.py,
# and zarrs' hierarchy.zarr when the third-party fixtures are there) lists
# as the specification's tree; consolidated metadata is
# used by default and ignored with `-o consolidated=no` (a generated store
# whose consolidated and per-node metadata differ, so the values show which
# was read); a node only the consolidated metadata knows is listed and
# readable; raw files stay byte-identical; a bad option value is refused;
# an unsupported chunk grid (zarrs.regular_bounded) mounts, serves its raw keys and fails
# values.txt with EIO and one log line naming the grid.
. "$(dirname "$0")/lib.sh"

# ---- the Zarr V3 specification's example hierarchy ----
# Written by the tests (tests/writers/own_fixtures.py) from the
# specification; zarrs' copy (hierarchy.zarr of its tests_data, EXPECTED.md
# section 3) on top when the third-party fixtures are there.

# hier NAME STORE: STORE lists as the specification's tree.
hier() {
  local name=$1 store=$2 MNT tree
  MNT=$(zt_mkdir hier)
  zmount "$store" "$MNT" || return
  # The node tree: directories holding zarr.json, arrays with shape and
  # data type read from their zarr.json through the mount.
  tree=$(cd "$MNT" && t find . -name zarr.json | sed 's|/zarr.json$||' | LC_ALL=C sort | while read -r d; do
    f=$d/zarr.json
    [ "$d" = . ] && { echo /; continue; }
    depth=$(($(printf '%s' "$d" | tr -cd / | wc -c)))
    name=${d##*/}
    if grep -q '"array"' "$f"; then
      shape=$(tr -d ' \n' <"$f" | sed -n 's/.*"shape":\[\([0-9,]*\)\].*/\1/p' | sed 's/,/, /g')
      dtype=$(tr -d ' \n' <"$f" | sed -n 's/.*"data_type":"\([a-z0-9]*\)".*/\1/p')
      printf '%*s%s [%s] %s\n' $((2 * depth)) '' "$name" "$shape" "$dtype"
    else
      printf '%*s%s\n' $((2 * depth)) '' "$name"
    fi
  done)
  assert_eq "$name lists as the specification's tree" "/
  a
    baz [10000, 1000] float64
    foo [10000, 1000] float64
  b" "$tree"
  assert_output_eq "$name: a/ holds baz, foo, info.txt, zarr.json" \
    "baz
foo
info.txt
zarr.json
" ls "$MNT/a"
  assert_output_eq "$name: a/baz/ holds info.txt, rows.csv, values.txt, zarr.json" \
    "info.txt
rows.csv
values.txt
zarr.json
" ls "$MNT/a/baz"
  assert_output_eq "$name: a/baz/values.txt starts with NaN fills" \
    "nan
nan
" head -n 2 "$MNT/a/baz/values.txt"
  assert_file_eq "$name: b/zarr.json byte-identical" "$store/b/zarr.json" "$MNT/b/zarr.json"
  zumount "$MNT"
}

if zt_own_fixtures; then
  hier "the V3 specification's hierarchy (own)" "$OWN/zarr-v3-spec/hierarchy.zarr"
else
  zt_skip_part "own fixtures not made ($(tail -1 "$ZT_TMP/own-fixtures.log")): the hierarchy"
fi
if zt_third_party_fixtures && [ -d "$FIX/zarrs/tests_data/hierarchy.zarr" ]; then
  hier "zarrs' hierarchy.zarr" "$FIX/zarrs/tests_data/hierarchy.zarr"
fi

# ---- a generated store: consolidated and per-node metadata differ ----

arr() { # arr SHAPE FILL: a V3 int32 array document, chunk = shape
  printf '{"zarr_format":3,"node_type":"array","shape":[%s],"data_type":"int32","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[%s]}},"chunk_key_encoding":{"name":"default"},"fill_value":%s,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}' "$1" "$1" "$2"
}
S="$ZT_TMP/cons.zarr"
mkdir -p "$S/arr" "$S/grp" "$S/rect/c"
printf '{"zarr_format":3,"node_type":"group","consolidated_metadata":{"kind":"inline","must_understand":false,"metadata":{"arr":%s,"grp":{"zarr_format":3,"node_type":"group"},"grp/ghost":%s}}}' \
  "$(arr 2 7)" "$(arr 3 5)" >"$S/zarr.json"
arr 4 0 >"$S/arr/zarr.json"
printf '{"zarr_format":3,"node_type":"group"}' >"$S/grp/zarr.json"
printf '{"zarr_format":3,"node_type":"array","shape":[5],"data_type":"int32","chunk_grid":{"name":"zarrs.regular_bounded","configuration":{"chunk_shape":[2]}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}' >"$S/rect/zarr.json"
printf '\001\000\000\000\002\000\000\000' >"$S/rect/c/0"

MNT=$(zt_mkdir cons)
if zmount "$S" "$MNT"; then
  assert_output_eq "consolidated: arr/values.txt from the consolidated metadata" \
    "7
7
" cat "$MNT/arr/values.txt"
  assert_output_eq "consolidated: grp lists the node only consolidated metadata names" \
    "ghost
info.txt
zarr.json
" ls "$MNT/grp"
  assert_output_eq "consolidated: grp/ghost/values.txt (no zarr.json on disk)" \
    "5
5
5
" cat "$MNT/grp/ghost/values.txt"
  assert_file_eq "consolidated: arr/zarr.json byte-identical" "$S/arr/zarr.json" "$MNT/arr/zarr.json"
  assert_file_eq "consolidated: zarr.json byte-identical" "$S/zarr.json" "$MNT/zarr.json"
  # An unsupported grid: mounts, raw keys served, views refused.
  assert_file_eq "unsupported grid: raw chunk byte-identical" "$S/rect/c/0" "$MNT/rect/c/0"
  assert_file_eq "unsupported grid: zarr.json byte-identical" "$S/rect/zarr.json" "$MNT/rect/zarr.json"
  assert_fails_with_eio "unsupported grid: values.txt fails with EIO" "$MNT/rect/values.txt"
  assert_fails_with_eio "unsupported grid: values.txt fails again" "$MNT/rect/values.txt"
  n=$(grep -c "rect/zarr.json: unsupported chunk grid 'zarrs.regular_bounded'" "$ZT_LOG")
  assert_eq "unsupported grid: one log line naming the grid" 1 "$n"
  zumount "$MNT"
fi

MNT=$(zt_mkdir nocons)
if zmount "$S" "$MNT" -o consolidated=no; then
  assert_output_eq "consolidated=no: arr/values.txt from arr/zarr.json" \
    "0
0
0
0
" cat "$MNT/arr/values.txt"
  assert_output_eq "consolidated=no: grp lists only what is stored (and its info.txt)" \
    "info.txt
zarr.json
" ls "$MNT/grp"
  if [ -e "$MNT/grp/ghost" ]; then
    fail "consolidated=no: grp/ghost should not exist"
  else
    pass "consolidated=no: grp/ghost absent"
  fi
  zumount "$MNT"
fi

MNT=$(zt_mkdir bad)
t "$ZARRFS_BIN" -f -o consolidated=maybe "$S" "$MNT" >"$ZT_TMP/bad.out" 2>&1
st=$?
assert_eq "consolidated=maybe: exit status 1" 1 "$st"
assert_eq "consolidated=maybe: one line naming the option" \
  "zarrfs: bad consolidated 'maybe' (yes or no)" "$(cat "$ZT_TMP/bad.out")"

finish
