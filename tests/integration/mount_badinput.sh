#!/bin/bash
# mount_badinput.sh - bad input is an error, not a crash. Driven by
# DIR/EXPECTED.txt from `zarrfs-mkstore badinput DIR`, one case a line:
#   <array> <file>                  the file must fail to read with EIO
#   <array> <file> <content>        the file must read ok, content with \n escaped
# (<file> is relative to the array directory.) For every failure the daemon
# must log a line `zarrfs: <store>: <key>: <reason>` naming the key, log it
# once (retries do not log again), and keep serving: healthy files still
# read, raw files stay byte-identical, the daemon is alive at the end.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

SRC="$ZT_TMP/badinput"
if ! t "$ZARRFS_MKSTORE" badinput "$SRC" >"$ZT_TMP/mkstore.log" 2>&1; then
  show "$ZT_TMP/mkstore.log"
  zt_hard_error "zarrfs-mkstore badinput failed"
fi
CASES="$SRC/EXPECTED.txt"
[ -s "$CASES" ] || zt_hard_error "$CASES missing or empty"

MNT=$(zt_mkdir mnt)
zmount "$SRC" "$MNT" || finish
LOG=$ZT_LOG
PID=$ZT_PID

# Log lines that name array A (key A or A/...), well formed:
# "zarrfs: <store>: <key>: <reason>" with a non-empty reason.
log_lines_for() {
  awk -v a="$1" '
    index($0, "zarrfs: ") == 1 {
      n = split($0, f, ": ")
      for (i = 3; i < n; i++)
        if ((f[i] == a || index(f[i], a "/") == 1) && f[i + 1] != "") { print; next }
    }' "$LOG"
}

ok_array=""
ok_file=""
ok_content=""
nfail=0
nok=0
while IFS= read -r line || [ -n "$line" ]; do
  case $line in "" | "#"*) continue ;; esac
  read -r array file content <<<"$line"
  f="$MNT/$array/$file"
  [ "$array" = . ] && f="$MNT/$file"
  if [ -z "$content" ]; then
    nfail=$((nfail + 1))
    before=$(log_lines_for "$array" | wc -l)
    assert_fails_with_eio "$array/$file fails with EIO" "$f"
    after=$(log_lines_for "$array" | wc -l)
    if [ "$after" -ge 1 ]; then
      pass "$array/$file: log names the key and a reason"
    else
      fail "$array/$file: no log line 'zarrfs: <store>: $array/...: <reason>'; log so far:"
      show "$LOG"
    fi
    if [ $((after - before)) -gt 1 ]; then
      fail "$array/$file: one failed read logged $((after - before)) lines (expected one)"
      log_lines_for "$array" | tail -n $((after - before)) | show
    fi
    # A retry must fail the same way and not log again.
    assert_fails_with_eio "$array/$file fails with EIO again" "$f"
    t cat -- "$f" >/dev/null 2>&1
    again=$(log_lines_for "$array" | wc -l)
    assert_eq "$array/$file: retries log nothing new" "$after" "$again"
  else
    nok=$((nok + 1))
    printf '%b' "$content" >"$ZT_TMP/ok.exp"
    t cat -- "$f" >"$ZT_TMP/ok.got" 2>"$ZT_TMP/ok.err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      fail "$array/$file should read ok, cat exited $rc"
      show "$ZT_TMP/ok.err"
    else
      assert_file_eq "$array/$file reads ok" "$ZT_TMP/ok.exp" "$ZT_TMP/ok.got"
    fi
    assert_size_matches "$array/$file: stat size == bytes read" "$f"
    ok_array=$array ok_file=$file ok_content=$content
  fi
  if kill -0 "$PID" 2>/dev/null; then :; else
    fail "daemon died after case '$line'"
    show "$LOG"
    finish
  fi
done <"$CASES"
say "$nfail must-fail cases, $nok must-read cases"
[ "$nfail" -gt 0 ] || fail "EXPECTED.txt has no must-fail case"

# Every array of the cases: its stored files stay byte-identical and it
# still lists (a broken zarr.json or chunk does not hide the raw files).
for array in $(awk '!/^#/ && NF { print $1 }' "$CASES" | sort -u); do
  d="$SRC/$array"
  m="$MNT/$array"
  if t ls -A "$m" >/dev/null 2>"$ZT_TMP/ls.err"; then
    pass "$array: ls works"
  else
    fail "$array: ls fails"
    show "$ZT_TMP/ls.err"
  fi
  while IFS= read -r f; do
    rel=${f#"$d"/}
    assert_file_eq "$array: raw $rel byte-identical" "$f" "$m/$rel"
  done < <(find "$d" -type f | sort)
done

# Every log line is a single well-formed line.
bad=$(grep -v '^zarrfs: ' "$LOG" | grep -v '^$' | head -5)
assert_eq "every daemon log line starts with 'zarrfs: '" "" "$bad"
zt_check_log_clean "$LOG"

# Still alive, still serving.
if kill -0 "$PID" 2>/dev/null; then pass "daemon alive after all bad input"; else fail "daemon died"; fi
if [ -n "$ok_file" ]; then
  printf '%b' "$ok_content" >"$ZT_TMP/ok.exp"
  f="$MNT/$ok_array/$ok_file"
  [ "$ok_array" = . ] && f="$MNT/$ok_file"
  assert_file_eq "final read of $ok_array/$ok_file works" "$ZT_TMP/ok.exp" "$f"
else
  fail "EXPECTED.txt has no must-read case"
fi
zumount "$MNT"

# ---- a file given as SOURCE that is not a reference file ----
# A metadata file, a file that is not JSON, and JSON that is not kerchunk
# references (a .zarray renamed) are refused with one line naming the
# directory to mount; kerchunk references (version 0 and 1) still mount.
refuse_source() {
  local desc=$1 src=$2
  shift 2
  timeout -k 2 10 "$ZARRFS_BIN" -f "$src" "$ZT_TMP/rmnt" >/dev/null 2>"$ZT_TMP/refuse.err" </dev/null
  assert_eq "$desc: exit status" 1 "$?"
  assert_one_refusal "$desc: one line" "$ZT_TMP/refuse.err" "$@"
}
mkdir -p "$ZT_TMP/rmnt" "$ZT_TMP/files"
V2=$(zt_mkdir v2store)
printf '{"zarr_format":2}' >"$V2/.zgroup"
mkdir -p "$V2/a"
printf '{"zarr_format":2,"shape":[2],"chunks":[2],"dtype":"<i1","compressor":null,"fill_value":0,"filters":null,"order":"C"}' >"$V2/a/.zarray"
printf '{}' >"$V2/a/.zattrs"
printf '\001\002' >"$V2/a/0"
V2R=$(realpath "$V2")
refuse_source "a .zarray as SOURCE" "$V2/a/.zarray" "$V2/a/.zarray" "metadata file" "mount the Zarr store $V2R instead"
refuse_source "a .zattrs as SOURCE" "$V2/a/.zattrs" "metadata file" "$V2R instead"
refuse_source "a .zgroup as SOURCE" "$V2/.zgroup" "metadata file" "$V2R instead"
mkdir -p "$ZT_TMP/meta"
for meta in zarr.json .zmetadata; do
  cp "$V2/a/.zarray" "$ZT_TMP/meta/$meta"
  refuse_source "a $meta as SOURCE" "$ZT_TMP/meta/$meta" "metadata file" "$(realpath "$ZT_TMP/meta") instead"
done
refuse_source "a chunk as SOURCE" "$V2/a/0" "not JSON" "mount the Zarr store $V2R instead"
cp "$V2/a/.zarray" "$ZT_TMP/files/array.json"
refuse_source "a renamed .zarray as SOURCE" "$ZT_TMP/files/array.json" "not kerchunk references" "directory of a Zarr store"
printf 'hello\n' >"$ZT_TMP/files/notes.txt"
refuse_source "a text file as SOURCE" "$ZT_TMP/files/notes.txt" "not JSON"
printf '{}' >"$ZT_TMP/files/.zattrs"
refuse_source "a lone .zattrs as SOURCE" "$ZT_TMP/files/.zattrs" "metadata file" \
  "mount its directory $(realpath "$ZT_TMP/files") instead"
# Version 0 and version 1 references still mount.
printf '{"zarr_format":2}' >"$ZT_TMP/files/zgroup.exp"
printf '{".zgroup":"{\\"zarr_format\\":2}"}' >"$ZT_TMP/files/v0.json"
printf '{"version":1,"refs":{".zgroup":"{\\"zarr_format\\":2}"}}' >"$ZT_TMP/files/v1.json"
for refs in v0 v1; do
  RM=$(zt_mkdir "mnt_$refs")
  if zmount "$ZT_TMP/files/$refs.json" "$RM"; then
    assert_file_eq "$refs references mount" "$ZT_TMP/files/zgroup.exp" "$RM/.zgroup"
    zumount "$RM"
  else
    fail "$refs references refused"
  fi
done

finish
