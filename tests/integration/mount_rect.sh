#!/bin/bash
# mount_rect.sh - rectangular and rectilinear chunk grids through the real
# daemon, on stores written by an independent writer (Node.js, standard
# library only: tests/writers/rect_writer.js) together with the text
# zarrfs must show: 1-D and 2-D int32, float64 and vlen-utf8 string arrays,
# bytes with and without gzip, missing chunks (the fill value), runs, an
# integer dimension beside a listed one, a rectilinear chunk that
# overshoots the array, and shards of two shapes (sharding_indexed, inner
# chunks with gzip, a CRC-32C index, an empty inner chunk). For every array: values.txt and each chunk view
# (cat, wc -l, tail, a read in small pieces, stat size) equal the writer's
# text; every directory lists the stored keys, KEY.txt beside each and
# values.txt; raw keys are byte-identical; `zarrfs cat` (no FUSE) gives
# the same bytes; `zarrfs info` and the user.zarr.chunks attribute show
# the grid. A grid whose edges miss the shape fails with EIO and
# one log line naming the reason. Needs node (skip, or fail under CI).
. "$(dirname "$0")/lib.sh"

command -v node >/dev/null 2>&1 || zt_skip_or_fail "node is not installed"
W="$ZT_TMP/w"
if ! t node "$ZARRFS_SRCDIR/tests/writers/rect_writer.js" "$W" >"$ZT_TMP/writer.log" 2>&1; then
  show "$ZT_TMP/writer.log"
  zt_hard_error "rect_writer.js failed"
fi
S="$W/store"
E="$W/expected"
ARRAYS="i32_1d f64_2d grp/i32_2d overshoot str_1d sharded"

MNT=$(zt_mkdir rect)
zmount "$S" "$MNT" -o xattr || finish

for a in $ARRAYS; do
  # every expected view: values.txt and the stored chunks' KEY.txt
  while IFS= read -r rel; do
    f="$a/$rel"
    assert_file_eq "$f: cat equals the writer's text" "$E/$f" "$MNT/$f"
    assert_eq "$f: wc -l" "$(wc -l <"$E/$f")" "$(t wc -l <"$MNT/$f")"
    assert_eq "$f: tail -n 2" "$(tail -n 2 "$E/$f")" "$(t tail -n 2 "$MNT/$f")"
    assert_eq "$f: stat size" "$(stat -c %s "$E/$f")" "$(stat -c %s "$MNT/$f")"
    t dd if="$MNT/$f" bs=3 status=none >"$ZT_TMP/dd.out"
    assert_file_eq "$f: read 3 bytes at a time" "$E/$f" "$ZT_TMP/dd.out"
    t "$ZARRFS_BIN" cat "$S" "/$f" >"$ZT_TMP/cmd.out" 2>"$ZT_TMP/cmd.err"
    assert_file_eq "$f: zarrfs cat gives the same bytes" "$E/$f" "$ZT_TMP/cmd.out"
  done < <(cd "$E/$a" && find . -name '*.txt' | sed 's|^\./||' | sort)

  # listings: stored names, KEY.txt beside each stored chunk, values.txt
  # and info.txt (and rows.csv in an array of two or more dimensions)
  while IFS= read -r d; do
    rel=${d#"$S/"}
    want=$( (
      ls -A "$d"
      find "$d" -maxdepth 1 -type f ! -name zarr.json -printf '%f.txt\n'
      [ "$rel" = "$a" ] && printf '%s\n' values.txt info.txt
      [ "$rel" = "$a" ] && tr -d ' \n' <"$d/zarr.json" | grep -q '"shape":\[[0-9]*,' &&
        echo rows.csv
    ) | sort)
    assert_eq "ls $rel" "$want" "$(t ls -A "$MNT/$rel" | sort)"
  done < <(find "$S/$a" -type d | sort)

  # raw keys byte-identical
  while IFS= read -r k; do
    assert_file_eq "$a/$k: raw bytes identical" "$S/$a/$k" "$MNT/$a/$k"
  done < <(cd "$S/$a" && find . -type f | sed 's|^\./||' | sort)
done

# A missing chunk has no view; the chunk past a rectilinear array's end
# (the writer's third edge) is not in the grid.
if [ -e "$MNT/i32_1d/c/1.txt" ]; then
  fail "i32_1d/c/1.txt: a missing chunk should have no view"
else
  pass "i32_1d/c/1.txt: a missing chunk has no view"
fi
if [ -e "$MNT/overshoot/c/2.txt" ]; then
  fail "overshoot/c/2.txt: outside the grid, should not exist"
else
  pass "overshoot/c/2.txt: outside the grid"
fi

# `zarrfs info` names the grid and shows the largest chunk.
info=$(t "$ZARRFS_BIN" info "$S" /f64_2d 2>/dev/null | grep -E '^(chunk_shape|chunk_grid|chunks):')
assert_eq "f64_2d: zarrfs info names the grid" "chunk_shape: [2, 2]
chunk_grid: rectilinear (chunk_shape: the largest)
chunks: 12 (3 x 4)" "$info"

# user.zarr.chunks of a grid of listed edges: its chunk_grid, compact.
if command -v getfattr >/dev/null 2>&1; then
  assert_eq "f64_2d: user.zarr.chunks is the chunk_grid" \
    '{"name":"rectilinear","configuration":{"kind":"inline","chunk_shapes":[[[2,2],1],[1,[2,2],1]]}}' \
    "$(t getfattr --absolute-names --only-values -n user.zarr.chunks "$MNT/f64_2d")"
else
  zt_skip_part "getfattr (Debian package attr) is not installed"
fi

# Edges that do not add up to the shape: EIO, one log line with the reason.
assert_fails_with_eio "bad_sum: values.txt fails with EIO" "$MNT/bad_sum/values.txt"
assert_fails_with_eio "bad_sum: values.txt fails again" "$MNT/bad_sum/values.txt"
n=$(grep -c "bad_sum/zarr.json: invalid metadata: chunk_shape\[0\]: chunk edge lengths add up to 7, less than the shape 10" "$ZT_LOG")
assert_eq "bad_sum: one log line naming the reason" 1 "$n"

zumount "$MNT"
finish
