# servers.sh - real servers on 127.0.0.1 for the remote tests, sourced
# after lib.sh (which owns ZT_TMP and the EXIT trap; the servers started
# here are listed in $ZT_TMP/servers.pids and killed by its teardown).
#
#   srv_need NAME            a server or tool is missing: fail under
#                            CI=true, else skip the rest of the script
#                            (zt_skip_or_fail), with one line
#   srv_nginx_start ROOT     nginx (Debian) serving ROOT, ranges on; sets
#                            NGINX_URL, NGINX_LOG ($request $status
#                            $body_bytes_sent "$http_range")
#   srv_nginx_requests [PAT] requests logged (whose line holds PAT)
#   srv_nginx_bytes [PAT]    body bytes sent (of those lines)
#   srv_nginx_log_reset      forget the log so far
#   srv_fault_start ROOT [--times]  tests/integration/faultsrv serving ROOT;
#                            sets FAULT_URL, FAULT_LOG (METHOD PATH RANGE
#                            STATUS BYTES; with --times after ARRIVED_MS DONE_MS)
#   srv_fault_mode MODE      the fault server's global mode (ok clears)
#   srv_fault_requests [PAT] requests logged (whose line holds PAT)
#   srv_s3_start DATADIR     @20minutes/s3rver 5.0.0 on Node (verifies
#                            SigV4; key and secret S3RVER); sets S3_ENDPOINT
#   srv_s3_put_tree BUCKET DIR  create BUCKET and upload every file of DIR
#                            (keys: relative paths, percent-encoded)
#   same_tree DESC L R       mounts L (local) and R (remote) hold the same
#                            names and bytes (a file failing in L fails in R)
#   srv_azurite_start        Azurite (Microsoft's Azure Storage emulator,
#                            verifies Shared Key and SAS) on a free port with
#                            a temporary location; sets AZ_ENDPOINT (path-
#                            style, the account in its path), AZ_ACCOUNT and
#                            AZ_KEY (its documented development account)
#   srv_az_container NAME [public]  create a container (public: anonymous
#                            reads and listings)
#   srv_az_put_tree NAME DIR upload every file of DIR (keys: relative paths)
#   srv_az_sas               print an account SAS token (read, list)
#
# s3rver's package directory: $ZARRFS_S3RVER_DIR, default
# /opt/zarrfs-test/node_modules/@20minutes/s3rver (installed by .ci/run);
# Azurite's: $ZARRFS_AZURITE_DIR, default
# /opt/zarrfs-test/azurite/node_modules/azurite.

srv_need() {
  if [ "${CI:-}" = true ]; then
    say "FAIL: $1 is not installed (CI=true; .ci/run installs it)"
    ZT_FAIL=$((ZT_FAIL + 1))
    finish
  fi
  zt_skip_or_fail "$1 is not installed"
}

# Remember a server's pid for the teardown.
srv_track() { echo "$1" >>"$ZT_TMP/servers.pids"; }

# Wait (bounded) for FILE to hold a port number; print it.
srv_wait_port() {
  local f=$1 i=0
  while [ "$i" -lt 100 ]; do
    if [ -s "$f" ]; then
      cat "$f"
      return 0
    fi
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

# A free port on 127.0.0.1 (not listened on now).
srv_free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! ss -ltn 2>/dev/null | awk '{ print $4 }' | grep -q ":$p\$"; then
      echo "$p"
      return
    fi
  done
}

srv_nginx_start() {
  local root=$1 d bin=/usr/sbin/nginx port i
  [ -x "$bin" ] || bin=$(command -v nginx) || srv_need nginx
  d=$(zt_mkdir nginx)
  mkdir -p "$d/tmp"
  for i in 1 2 3 4 5; do
    port=$(srv_free_port)
    cat >"$d/nginx.conf" <<EOF
worker_processes 1;
$( [ "$(id -u)" = 0 ] && echo "user root;")
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 512; }
http {
  log_format zt '\$request \$status \$body_bytes_sent "\$http_range"';
  access_log $d/access.log zt;
  client_body_temp_path $d/tmp; proxy_temp_path $d/tmp;
  fastcgi_temp_path $d/tmp; uwsgi_temp_path $d/tmp; scgi_temp_path $d/tmp;
  sendfile on;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$port;
    root $root;
    autoindex off;
  }
}
EOF
    "$bin" -c "$d/nginx.conf" -p "$d" >"$d/stdout" 2>&1 &
    local pid=$!
    srv_track "$pid"
    local j=0
    while [ "$j" -lt 50 ]; do
      if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
        NGINX_URL="http://127.0.0.1:$port"
        NGINX_LOG="$d/access.log"
        export NGINX_URL NGINX_LOG
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
      j=$((j + 1))
    done
    kill "$pid" 2>/dev/null
  done
  fail "nginx did not start; its log:"
  show "$d/error.log"
  finish
}

# Log lines holding PAT (all when empty).
srv_log_lines() { if [ -n "${2:-}" ]; then grep -F -- "$2" "$1"; else cat "$1"; fi; }
srv_nginx_requests() { srv_log_lines "$NGINX_LOG" "${1:-}" | wc -l; }
srv_nginx_bytes() {
  srv_log_lines "$NGINX_LOG" "${1:-}" | awk '{ s += $(NF-1) } END { print s + 0 }'
}
srv_nginx_log_reset() { : >"$NGINX_LOG"; }

srv_fault_start() {
  local root=$1 bin=${ZARRFS_BUILDDIR:-.}/tests/integration/faultsrv d port
  [ -x "$bin" ] || srv_need "tests/integration/faultsrv (make check builds it)"
  d=$(zt_mkdir fault)
  "$bin" --root "$root" --port-file "$d/port" --log "$d/access.log" "${@:2}" \
    >"$d/stdout" 2>&1 &
  srv_track $!
  port=$(srv_wait_port "$d/port") || {
    fail "faultsrv did not start"
    show "$d/stdout"
    finish
  }
  FAULT_URL="http://127.0.0.1:$port"
  FAULT_LOG="$d/access.log"
  export FAULT_URL FAULT_LOG
}

srv_fault_mode() { curl -sf -o /dev/null "$FAULT_URL/_control/mode/$1"; }
srv_fault_requests() { srv_log_lines "$FAULT_LOG" "${1:-}" | wc -l; }

srv_s3_start() {
  local data=$1 dir=${ZARRFS_S3RVER_DIR:-/opt/zarrfs-test/node_modules/@20minutes/s3rver}
  local d port
  command -v node >/dev/null 2>&1 || srv_need node
  [ -f "$dir/lib/s3rver.js" ] || srv_need "s3rver ($dir)"
  command -v jq >/dev/null 2>&1 || srv_need jq
  mkdir -p "$data"
  d=$(zt_mkdir s3rver)
  cat >"$d/run.js" <<'EOF'
const S3rver = require(process.argv[2]);
const fs = require('fs');
new S3rver({ port: 0, address: '127.0.0.1', silent: true,
             directory: process.argv[3], vhostBuckets: false })
  .run().then((a) => {
    fs.writeFileSync(process.argv[4] + '.tmp', String(a.port));
    fs.renameSync(process.argv[4] + '.tmp', process.argv[4]);
  });
EOF
  node "$d/run.js" "$dir" "$data" "$d/port" >"$d/stdout" 2>&1 &
  srv_track $!
  port=$(srv_wait_port "$d/port") || {
    fail "s3rver did not start"
    show "$d/stdout"
    finish
  }
  S3_ENDPOINT="http://127.0.0.1:$port"
  export S3_ENDPOINT
}

# A signed request to s3rver.
srv_s3_curl() {
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"
}

srv_s3_put_tree() {
  local bucket=$1 dir=$2 f key
  srv_s3_curl -X PUT -o /dev/null "$S3_ENDPOINT/$bucket" ||
    { fail "s3rver: cannot create bucket $bucket"; return 1; }
  (cd "$dir" && find . -type f -printf '%P\0') | while IFS= read -r -d '' f; do
    key=$(printf '%s' "$f" | jq -sRr 'split("/") | map(@uri) | join("/")')
    srv_s3_curl -T "$dir/$f" -o /dev/null "$S3_ENDPOINT/$bucket/$key" ||
      say "s3rver: upload of $f failed"
  done
}

srv_azurite_start() {
  local dir=${ZARRFS_AZURITE_DIR:-/opt/zarrfs-test/azurite/node_modules/azurite}
  local d port
  command -v node >/dev/null 2>&1 || srv_need node
  [ -f "$dir/dist/src/blob/main.js" ] || srv_need "azurite ($dir)"
  d=$(zt_mkdir azurite)
  # Port 0: Azurite picks a free one and says which.
  node "$dir/dist/src/blob/main.js" --blobHost 127.0.0.1 --blobPort 0 \
    --inMemoryPersistence --loose --skipApiVersionCheck \
    --disableTelemetry \
    >"$d/stdout" 2>&1 &
  srv_track $!
  local i=0
  while [ "$i" -lt 300 ]; do
    port=$(sed -n 's|.*listens on http://127.0.0.1:\([0-9]*\).*|\1|p' "$d/stdout" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.1
    i=$((i + 1))
  done
  if [ -z "$port" ]; then
    fail "azurite did not start"
    show "$d/stdout"
    finish
  fi
  AZ_ACCOUNT=devstoreaccount1
  AZ_KEY="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
  AZ_ENDPOINT="http://127.0.0.1:$port/$AZ_ACCOUNT"
  export AZ_ACCOUNT AZ_KEY AZ_ENDPOINT
}

srv_az_js() { node "$ZARRFS_SRCDIR/tests/integration/azput.js" "$@"; }
srv_az_container() {
  srv_az_js container "$AZ_ENDPOINT" "$AZ_ACCOUNT" "$AZ_KEY" "$@" ||
    { fail "azurite: cannot create container $1"; return 1; }
}
srv_az_put_tree() {
  srv_az_js tree "$AZ_ENDPOINT" "$AZ_ACCOUNT" "$AZ_KEY" "$1" "$2" ||
    { fail "azurite: upload of $2 failed"; return 1; }
}
srv_az_sas() { srv_az_js sas "$AZ_ACCOUNT" "$AZ_KEY"; }

# same_tree DESC LOCAL_MNT REMOTE_MNT: the same names, the same bytes (a
# file that fails locally must fail remotely).
same_tree() {
  local desc=$1 l=$2 r=$3 bad=0 n=0 f rel
  (cd "$l" && find . | sort) >"$ZT_TMP/tree.l"
  (cd "$r" && find . | sort) >"$ZT_TMP/tree.r"
  if cmp -s "$ZT_TMP/tree.l" "$ZT_TMP/tree.r"; then
    pass "$desc: the same tree ($(wc -l <"$ZT_TMP/tree.l") names)"
  else
    fail "$desc: trees differ:"
    diff "$ZT_TMP/tree.l" "$ZT_TMP/tree.r" | head -20 | show
  fi
  while IFS= read -r -d '' f; do
    rel=${f#"$l"/}
    n=$((n + 1))
    if t cat "$f" >"$ZT_TMP/l.out" 2>/dev/null; then
      t cat "$r/$rel" 2>/dev/null | cmp -s - "$ZT_TMP/l.out" ||
        { say "differs: $rel"; bad=$((bad + 1)); }
    elif t cat "$r/$rel" >/dev/null 2>&1; then
      say "fails locally, reads remotely: $rel"
      bad=$((bad + 1))
    fi
  done < <(find "$l" -type f -print0)
  assert_eq "$desc: all $n files identical" 0 "$bad"
}
