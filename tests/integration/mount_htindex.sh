#!/bin/bash
# mount_htindex.sh - a plain-HTTP store without consolidated metadata
# (issue 36 item 8), served by a real nginx on 127.0.0.1:
#  1. with `autoindex on` its directories are listed from the index pages:
#     the whole tree (names and file types, views included) is the local
#     mount's, a V2 store's dot files (which nginx leaves out of its pages)
#     included; a group only the listing names reads; a directory that is
#     no Zarr node is a directory; a name to percent-encode reads; each
#     index page is fetched once for repeated listings; the root info.txt
#     names the members and says nothing is unlisted;
#  2. with `autoindex off` the root info.txt and the log say the listing
#     is unknown and how to have it (index pages or consolidated
#     metadata), and what metadata names still reads by name;
#  3. a store with consolidated metadata and no index pages says nothing
#     of the kind (its metadata lists it).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
export LC_ALL=C
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || srv_need nginx

FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
V2="$FIX/zarr-python-v2/v2_python.zarr"
WEB=$(zt_mkdir web)
S="$WEB/store.zarr"
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$S"
mkdir -p "$S/obs" "$S/notes dir"
printf '{"zarr_format":3,"node_type":"group","attributes":{}}' >"$S/obs/zarr.json"
cp -r "$S/counts" "$S/obs/donor"
printf 'hello\n' >"$S/notes dir/a&b %.txt"
have_v2=0
if [ -d "$V2" ]; then
  cp -r "$V2" "$WEB/v2.zarr"
  rm -f "$WEB/v2.zarr/.zmetadata" # no consolidated metadata
  have_v2=1
fi

# tree MNT: every path below MNT with its file type, sorted.
tree() { (cd "$1" && t find . -printf '%p %y\n' | sort); }

srv_nginx_start "$WEB" autoindex
IDX_URL=$NGINX_URL IDX_LOG=$NGINX_LOG

# ---- 1. listed from the index pages ----
L=$(zt_mkdir local) M=$(zt_mkdir http)
if zmount "$S" "$L"; then
  tree "$L" >"$ZT_TMP/tree.local"
  zumount "$L"
fi
if zmount "$IDX_URL/store.zarr" "$M"; then
  tree "$M" >"$ZT_TMP/tree.http"
  if [ -s "$ZT_TMP/tree.local" ] && cmp -s "$ZT_TMP/tree.local" "$ZT_TMP/tree.http"; then
    pass "1: the tree over HTTP with index pages is the local mount's ($(wc -l <"$ZT_TMP/tree.http") paths)"
  else
    fail "1: the tree over HTTP with index pages differs from the local mount's"
    diff "$ZT_TMP/tree.local" "$ZT_TMP/tree.http" | head -30 | show
  fi
  assert_eq "1: ls of the root names the group only the listing knows" \
    "EXPECTED counts flags info.txt labels_utf8 matrix names_end names_start notes dir obs obs_names_sharded zarr.json" \
    "$(t ls "$M" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
  assert_file_eq "1: a group only the listing names reads" \
    "$S/EXPECTED/counts.txt" "$M/obs/donor/values.txt"
  assert_eq "1: a directory that is no Zarr node" directory \
    "$(stat -c %F "$M/EXPECTED" 2>&1)"
  assert_eq "1: a name to percent-encode" hello \
    "$(t cat "$M/notes dir/a&b %.txt" 2>&1)"
  before=$(srv_nginx_requests "GET /store.zarr/ ")
  t ls "$M" >/dev/null
  t ls -l "$M/obs" >/dev/null
  assert_eq "1: the root's index page fetched once for repeated listings" \
    "1 1" "$before $(srv_nginx_requests "GET /store.zarr/ ")"
  t cat "$M/info.txt" >"$ZT_TMP/info.idx" 2>&1
  if grep -qx "groups: 1" "$ZT_TMP/info.idx" && grep -qx "  obs" "$ZT_TMP/info.idx" &&
    grep -q "^variables: [1-9]" "$ZT_TMP/info.idx" && ! grep -q "^listing:" "$ZT_TMP/info.idx"; then
    pass "1: the root info.txt names the members the index pages list"
  else
    fail "1: the root info.txt with index pages"
    show "$ZT_TMP/info.idx"
  fi
  if grep -q "not listed" "$ZT_LOG"; then
    fail "1: the log says a listed store is not listed"
    show "$ZT_LOG"
  fi
  zumount "$M"
fi
if [ "$have_v2" = 1 ]; then
  if zmount "$WEB/v2.zarr" "$L"; then
    tree "$L" >"$ZT_TMP/tree2.local"
    zumount "$L"
  fi
  if zmount "$IDX_URL/v2.zarr" "$M"; then
    tree "$M" >"$ZT_TMP/tree2.http"
    if [ -s "$ZT_TMP/tree2.local" ] && cmp -s "$ZT_TMP/tree2.local" "$ZT_TMP/tree2.http"; then
      pass "1: a V2 store's tree over HTTP with index pages is the local mount's ($(wc -l <"$ZT_TMP/tree2.http") paths)"
    else
      fail "1: a V2 store's tree over HTTP with index pages differs from the local mount's"
      diff "$ZT_TMP/tree2.local" "$ZT_TMP/tree2.http" | head -30 | show
    fi
    if grep -q "not listed" "$ZT_LOG"; then
      fail "1: the log says a listed V2 store is not listed"
      show "$ZT_LOG"
    fi
    zumount "$M"
  fi
else
  zt_skip_part "1: V2 store ($V2 missing)"
fi

# ---- 2. no index pages: said in the root info.txt and the log ----
srv_nginx_start "$WEB"
if zmount "$NGINX_URL/store.zarr" "$M"; then
  assert_eq "2: ls of the root shows what metadata names" "info.txt zarr.json" \
    "$(t ls "$M" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
  t cat "$M/info.txt" >"$ZT_TMP/info.none" 2>&1
  if grep -q "^listing: none (no directory index (.*403.*)): members are those metadata names; directory index pages or consolidated metadata (zarr.consolidate_metadata) would list every one$" \
    "$ZT_TMP/info.none"; then
    pass "2: the root info.txt says the listing is unknown, why, and how to have it"
  else
    fail "2: the root info.txt without index pages"
    show "$ZT_TMP/info.none"
  fi
  if grep -q "store.zarr: \.: not listed (no directory index (.*)): only what metadata names is shown; serve directory index pages, or consolidate the store's metadata (zarr.consolidate_metadata) to list every node" "$ZT_LOG"; then
    pass "2: the log says the root is not listed and how to have it listed"
  else
    fail "2: the log without index pages"
    show "$ZT_LOG"
  fi
  assert_eq "2: said once for repeated listings" 1 \
    "$(t ls "$M" >/dev/null; t ls "$M" >/dev/null; grep -c "not listed" "$ZT_LOG")"
  assert_file_eq "2: an array still reads by name" \
    "$S/EXPECTED/counts.txt" "$M/obs/donor/values.txt"
  zumount "$M"
fi

# ---- 3. consolidated metadata lists the store: nothing to say ----
if [ "$have_v2" = 1 ]; then
  cp -r "$V2" "$WEB/v2cons.zarr"
  if zmount "$NGINX_URL/v2cons.zarr" "$M"; then
    t ls "$M" >/dev/null
    t cat "$M/info.txt" >"$ZT_TMP/info.cons" 2>&1
    if grep -q "^groups: [1-9]" "$ZT_TMP/info.cons" &&
      ! grep -q "^listing:" "$ZT_TMP/info.cons" && ! grep -q "not listed" "$ZT_LOG"; then
      pass "3: a consolidated store without index pages: no word of a missing listing"
    else
      fail "3: a consolidated store without index pages"
      show "$ZT_TMP/info.cons"
      show "$ZT_LOG"
    fi
    zumount "$M"
  fi
else
  zt_skip_part "3: V2 store ($V2 missing)"
fi

finish
