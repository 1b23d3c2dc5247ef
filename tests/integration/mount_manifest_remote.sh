#!/bin/bash
# mount_manifest_remote.sh - VirtualiZarr chunk manifests on remote
# stores, through the real daemon, with real servers on 127.0.0.1 (nginx,
# and s3rver that verifies SigV4). A VirtualiZarr-style store is built
# here from the example store: every chunk copied at a scattered offset
# into one blob (blobs/blob.bin beside the store), each array's zarr.json
# naming ./manifest.json with paths relative to it ("../../blobs/blob.bin"),
# one array in a nested group, without consolidated metadata:
#  1. over HTTP (no listing): every file of the local mount of that store
#     reads the same through the HTTP mount (values.txt, chunk views, raw
#     chunks of every array, the nested one included);
#  2. over S3: the same tree, every name and every byte;
#  3. manifest.json named by URL in a local store's zarr.json: its
#     relative targets resolve against the manifest's URL;
#  4. manifest.json given by URL as SOURCE: the array that names it is
#     mounted; a manifest that no zarr.json beside it names is refused;
#  5. confinement, as for kerchunk targets (docs/confinement.md): a remote
#     manifest's local targets (absolute, file://) and a link-local address
#     fail with EIO and a log line saying why (a link-local address reads
#     once -o target_root=URL names it); -o remote_targets=no fails every
#     remote target; the mount keeps serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
zt_require_mkstore
command -v python3 >/dev/null 2>&1 || srv_need python3

WWW=$(zt_mkdir www)
PLAIN="$ZT_TMP/plain.zarr"
VIRT="$WWW/virt.zarr"
t "$ZARRFS_MKSTORE" example "$PLAIN" >"$ZT_TMP/mkstore.log" 2>&1 ||
  zt_hard_error "zarrfs-mkstore example failed"
# One array in a nested group (found over HTTP only as its zarr.json is
# read).
mkdir -p "$PLAIN/grp"
printf '{"zarr_format": 3, "node_type": "group", "attributes": {}}' \
  >"$PLAIN/grp/zarr.json"
cp -r "$PLAIN/labels_utf8" "$PLAIN/grp/labels2"
EXPECTED="$PLAIN/EXPECTED"

# The virtual store: chunks into $WWW/blobs/blob.bin at scattered offsets,
# manifests with paths relative to themselves. "evil" is for part 5.
python3 - "$PLAIN" "$VIRT" "$WWW/blobs/blob.bin" <<'EOF' || zt_hard_error "building the virtual store failed"
import json, os, random, sys
plain, virt, blob = sys.argv[1:4]
os.makedirs(os.path.dirname(blob), exist_ok=True)
random.seed(35)
out = open(blob, "wb")
for d, dirs, files in os.walk(plain):
    dirs[:] = sorted(x for x in dirs if x != "EXPECTED")
    rel = os.path.relpath(d, plain)
    rel = "" if rel == "." else rel
    if "zarr.json" not in files:
        continue
    meta = json.load(open(os.path.join(d, "zarr.json")))
    vd = os.path.join(virt, rel)
    os.makedirs(vd, exist_ok=True)
    if meta.get("node_type") != "array":
        json.dump(meta, open(os.path.join(vd, "zarr.json"), "w"))
        continue
    dirs[:] = []
    cke = meta.get("chunk_key_encoding", {"name": "default"})
    sep = cke.get("configuration", {}).get("separator", "/" if cke["name"] == "default" else ".")
    up = "../" * (rel.count("/") + 2)  # from the array's directory to $WWW
    man = {}
    for cd, _, cfs in os.walk(d):
        for f in cfs:
            p = os.path.relpath(os.path.join(cd, f), d)
            if p == "zarr.json":
                continue
            key = p.replace("/", sep)
            parts = key.split(sep)
            if cke["name"] == "default":
                parts = parts[1:]
            data = open(os.path.join(cd, f), "rb").read()
            out.write(os.urandom(random.randint(1, 2048)))
            man[".".join(parts) if parts else "0"] = {
                "path": up + "blobs/blob.bin", "offset": out.tell(), "length": len(data)}
            out.write(data)
    meta["storage_transformers"] = [{"name": "chunk-manifest-json",
                                     "configuration": {"manifest": "./manifest.json"}}]
    json.dump(meta, open(os.path.join(vd, "zarr.json"), "w"))
    json.dump(man, open(os.path.join(vd, "manifest.json"), "w"))
EOF
# 5: "evil", a copy of counts whose chunks point at a local file, a file://
# URL and a link-local address; chunk 2 stays good.
cp -r "$VIRT/counts" "$VIRT/evil"
python3 - "$VIRT/evil/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["0"]["path"] = "/etc/hostname"
m["1"]["path"] = "file:///etc/hostname"
json.dump(m, open(sys.argv[1], "w"))
EOF
cp -r "$VIRT/counts" "$VIRT/linklocal"
python3 - "$VIRT/linklocal/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["0"]["path"] = "http://169.254.169.254:1/latest/data"
json.dump(m, open(sys.argv[1], "w"))
EOF
# 4: a manifest that no zarr.json beside it names
mkdir -p "$WWW/lonely"
cp "$VIRT/counts/manifest.json" "$WWW/lonely/manifest.json"

srv_nginx_start "$WWW"
L=$(zt_mkdir local)
zmount "$VIRT" "$L" -o "target_root=$WWW" || finish

# ---- 1. over HTTP ----
H=$(zt_mkdir http)
if zmount "$NGINX_URL/virt.zarr" "$H"; then
  for f in "$EXPECTED"/*.txt; do
    a=$(basename "$f" .txt)
    assert_file_eq "HTTP: $a/values.txt (chunks from the manifest)" "$f" "$H/$a/values.txt"
  done
  assert_file_eq "HTTP: grp/labels2/values.txt, in a nested group" \
    "$EXPECTED/labels_utf8.txt" "$H/grp/labels2/values.txt"
  bad=0 n=0
  while IFS= read -r -d '' f; do
    rel=${f#"$L"/}
    # info.txt counts stored chunks from listings, which HTTP has not
    case $rel in evil/* | linklocal/* | info.txt | */info.txt) continue ;; esac
    n=$((n + 1))
    if t cat "$f" >"$ZT_TMP/l.out" 2>/dev/null; then
      t cat "$H/$rel" 2>/dev/null | cmp -s - "$ZT_TMP/l.out" ||
        { say "HTTP differs: $rel"; bad=$((bad + 1)); }
    fi
  done < <(find "$L" -type f -print0)
  assert_eq "HTTP: all $n files of the local mount read the same" 0 "$bad"
  [ "$n" -gt 50 ] || fail "HTTP: only $n files compared"
  # 5 (HTTP): a remote manifest names no local file; link-local refused.
  assert_fails_with_eio "remote manifest: an absolute local path" "$H/evil/0"
  assert_fails_with_eio "remote manifest: a file:// URL" "$H/evil/1"
  assert_eq "... the log says a remote reference cannot read local files" 2 \
    "$(grep -c 'remote reference cannot read local files' "$ZT_LOG")"
  assert_file_eq "... the array's good chunk still reads" "$L/counts/2" "$H/evil/2"
  assert_fails_with_eio "remote manifest: a link-local target" "$H/linklocal/0"
  assert_eq "... the log names the address and the option" 1 \
    "$(grep -c 'link-local address 169.254.169.254.*target_root' "$ZT_LOG")"
  zumount "$H"
fi
H=$(zt_mkdir allowll)
if zmount "$NGINX_URL/virt.zarr" "$H" -o target_root=http://169.254.169.254:1/latest; then
  t cat "$H/linklocal/0" >/dev/null 2>&1
  assert_eq "with -o target_root=URL the link-local target is asked for" 1 \
    "$(grep -c 'linklocal/0: GET http://169.254.169.254:1/latest/data' "$ZT_LOG" | awk '{ print ($1 > 0) }')"
  assert_eq "... not refused" 0 "$(grep -c 'refused to connect to link-local' "$ZT_LOG")"
  zumount "$H"
fi
H=$(zt_mkdir noremote)
if zmount "$NGINX_URL/virt.zarr" "$H" -o remote_targets=no; then
  assert_fails_with_eio "-o remote_targets=no: a chunk of a remote manifest" "$H/counts/0"
  assert_eq "... the log says remote targets are forbidden" 1 \
    "$(grep -c 'remote targets are forbidden' "$ZT_LOG" | awk '{ print ($1 > 0) }')"
  assert_file_eq "... zarr.json still reads" "$VIRT/counts/zarr.json" "$H/counts/zarr.json"
  zumount "$H"
fi

# ---- 2. over S3 ----
if [ -f "${ZARRFS_S3RVER_DIR:-/opt/zarrfs-test/node_modules/@20minutes/s3rver}/lib/s3rver.js" ] &&
  command -v jq >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
  srv_s3_start "$ZT_TMP/s3data"
  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
  unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION
  UPL=$(zt_mkdir upl)
  cp -r "$VIRT" "$UPL/virt.zarr"
  rm -rf "$UPL/virt.zarr/evil" "$UPL/virt.zarr/linklocal"
  cp -r "$WWW/blobs" "$UPL/blobs"
  srv_s3_put_tree vbkt "$UPL"
  LS=$(zt_mkdir locals)
  S=$(zt_mkdir s3)
  if zmount "$UPL/virt.zarr" "$LS" -o "target_root=$UPL"; then
    if HOME="$ZT_TMP" zmount "s3://vbkt/virt.zarr" "$S" -o "endpoint=$S3_ENDPOINT"; then
      same_tree "S3: a store of manifests" "$LS" "$S"
      zumount "$S"
    fi
    zumount "$LS"
  fi
  unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
else
  zt_skip_part "s3rver, node or jq missing: part 2"
fi

# ---- 3. manifest.json named by URL ----
LOC=$(zt_mkdir byurl)
mkdir -p "$LOC/store/counts"
cp "$VIRT/zarr.json" "$LOC/store/zarr.json"
python3 - "$VIRT/counts/zarr.json" "$LOC/store/counts/zarr.json" \
  "$NGINX_URL/virt.zarr/counts/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["storage_transformers"][0]["configuration"]["manifest"] = sys.argv[3]
json.dump(m, open(sys.argv[2], "w"))
EOF
M=$(zt_mkdir byurlm)
if zmount "$LOC/store" "$M"; then
  assert_file_eq "manifest named by URL: counts/values.txt" \
    "$EXPECTED/counts.txt" "$M/counts/values.txt"
  zumount "$M"
fi

# ---- 4. manifest.json as SOURCE ----
M=$(zt_mkdir src)
if zmount "$NGINX_URL/virt.zarr/grp/labels2/manifest.json" "$M"; then
  assert_file_eq "manifest.json as SOURCE: the array that names it" \
    "$EXPECTED/labels_utf8.txt" "$M/values.txt"
  zumount "$M"
fi
t "$ZARRFS_BIN" -f "$NGINX_URL/lonely/manifest.json" "$(zt_mkdir lonely)" \
  >"$ZT_TMP/lonely.out" 2>&1
assert_eq "a manifest no zarr.json names: refused (exit 1)" 1 "$?"
assert_eq "... saying what to mount instead" 1 \
  "$(grep -c 'manifest.json: a VirtualiZarr manifest that no zarr.json beside it names' "$ZT_TMP/lonely.out")"

zumount "$L"
finish
