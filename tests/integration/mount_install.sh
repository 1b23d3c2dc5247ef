#!/bin/bash
# mount_install.sh - `make install` and mounting the way mount(8), fstab
# and systemd do. Installs the build into a staging directory (DESTDIR),
# checks the binary, the man page and the helper mount.fuse.zarrfs are
# there, then, in a private mount namespace (nothing outside it changes):
# binds the staged prefix over the real one, so the helper finds the
# binary it was made for; runs the helper with a PATH that lacks the
# prefix's bin (as systemd's does not hold it for /opt-style prefixes);
# puts the helper where mount(8) looks (a tmpfs over /usr/sbin holding
# only mount.fuse3 and the helper) and runs `mount -t fuse.zarrfs`, with
# zarrfs options and mount(8)-only ones (noauto, nofail) in -o; and reads
# through both mounts. Skips (77) where private mount namespaces or `make
# install` are not available.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

command -v unshare >/dev/null && unshare -m true 2>/dev/null ||
  zt_skip_or_fail "no private mount namespace (unshare -m)"
[ -f "$ZARRFS_BUILDDIR/Makefile" ] ||
  zt_skip_or_fail "no build directory with a Makefile at $ZARRFS_BUILDDIR"

SRC="$ZT_TMP/example.zarr"
t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1 ||
  zt_hard_error "zarrfs-mkstore example failed"
DEST="$ZT_TMP/dest"
if ! t env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ZARRFS_BUILDDIR" install DESTDIR="$DEST" >"$ZT_TMP/install.log" 2>&1; then
  show "$ZT_TMP/install.log"
  zt_hard_error "make install DESTDIR=$DEST failed"
fi
prefix=$(sed -n 's/^prefix = //p' "$ZARRFS_BUILDDIR/Makefile")
# (a make of its own: the MAKEFLAGS of the make running the tests would
# add "Entering directory" lines and jobserver descriptors)
bindir=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ZARRFS_BUILDDIR" --no-print-directory -f - print-dirs <<'EOF' 2>/dev/null
include Makefile
print-dirs:
	@echo $(bindir) $(sbindir) $(mandir)
EOF
)
read -r BINDIR SBINDIR MANDIR <<<"$(printf '%s\n' "$bindir" | grep '^/' | tail -1)"
for f in "$BINDIR/zarrfs" "$SBINDIR/mount.fuse.zarrfs"; do
  if [ -x "$DEST$f" ]; then pass "installed: $f"; else fail "not installed: $f"; fi
done
if [ -f "$DEST$MANDIR/man1/zarrfs.1" ]; then pass "installed: the man page"; else
  fail "not installed: $MANDIR/man1/zarrfs.1"
fi
if grep -q "$BINDIR" "$DEST$SBINDIR/mount.fuse.zarrfs"; then
  pass "the helper names the installed binary's directory"
else
  fail "the helper does not name $BINDIR"
fi
MF=$(sed -n 's/^MOUNT_FUSE3 = //p' "$ZARRFS_BUILDDIR/Makefile")
[ -x "$MF" ] || zt_skip_or_fail "no mount.fuse3 at '$MF'"

M1=$(zt_mkdir helper)
M2=$(zt_mkdir mount8)
SB=$(zt_mkdir sbin)
# Inside the namespace: every step prints one "ok ..." or "FAIL ..." line.
cat >"$ZT_TMP/inside.sh" <<'EOF'
set -u
DEST=$1 PREFIX=$2 SBINDIR=$3 MF=$4 SRC=$5 M1=$6 M2=$7 SB=$8
mkdir -p "$PREFIX" && mount --bind "$DEST$PREFIX" "$PREFIX" || { echo "FAIL bind $PREFIX"; exit 0; }
# 1. the helper, with a PATH that does not hold the prefix's bin
if env -i PATH=/usr/bin:/bin "$SBINDIR/mount.fuse.zarrfs" "$SRC" "$M1" -o ro,cache_size=1M >"$SB.h.out" 2>&1; then
  echo "ok helper exit 0"
else
  echo "FAIL helper: $(head -c 300 "$SB.h.out")"
fi
n=$(wc -l <"$M1/matrix/values.txt" 2>&1)
echo "lines1 $n"
fusermount3 -u "$M1" 2>/dev/null
# 2. mount(8) finding the helper where it looks (/sbin = /usr/sbin)
cp "$MF" "$SB/mount.fuse3"
ln -s "$SBINDIR/mount.fuse.zarrfs" "$SB/mount.fuse.zarrfs"
ln -s mount.fuse3 "$SB/mount.fuse"
for d in /usr/sbin /sbin; do [ -L "$d" ] || { mount --bind "$SB" "$d" && break; }; done
if env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin mount -t fuse.zarrfs "$SRC" "$M2" \
  -o ro,noauto,nofail,cache_size=2M,decode_threads=1 >"$SB.m.out" 2>&1; then
  echo "ok mount -t fuse.zarrfs exit 0"
else
  echo "FAIL mount -t fuse.zarrfs: $(head -c 300 "$SB.m.out")"
fi
n=$(wc -l <"$M2/matrix/values.txt" 2>&1)
echo "lines2 $n"
grep " $M2 " /proc/self/mounts | head -1 | sed 's/^/mounts /'
fusermount3 -u "$M2" 2>/dev/null || umount "$M2" 2>/dev/null
EOF
t unshare -m bash "$ZT_TMP/inside.sh" "$DEST" "$prefix" "$SBINDIR" "$MF" "$SRC" "$M1" "$M2" "$SB" >"$ZT_TMP/inside.out" 2>&1
want=$(wc -l <"$SRC/EXPECTED/matrix.txt")
for step in "helper exit 0" "mount -t fuse.zarrfs exit 0"; do
  if grep -qx "ok $step" "$ZT_TMP/inside.out"; then pass "$step"; else
    fail "$step:"
    show "$ZT_TMP/inside.out"
  fi
done
assert_eq "through the helper: matrix/values.txt has its lines" "lines1 $want" "$(grep '^lines1' "$ZT_TMP/inside.out")"
assert_eq "through mount -t fuse.zarrfs: matrix/values.txt has its lines" "lines2 $want" "$(grep '^lines2' "$ZT_TMP/inside.out")"
if grep -q "^mounts .* fuse.zarrfs ro" "$ZT_TMP/inside.out"; then
  pass "mount(8)'s mount is type fuse.zarrfs, read-only"
else
  fail "mount(8)'s mount is not listed as fuse.zarrfs ro:"
  show "$ZT_TMP/inside.out"
fi
# nothing is left mounted outside the namespace, and no daemon runs on
for m in "$M1" "$M2"; do
  if zt_is_mounted "$m"; then fail "$m is mounted outside the namespace"; fi
done
# they exit on their own after the unmount: wait for that, bounded
no_daemon() { ! pgrep -f "zarrfs $SRC" >/dev/null; }
if ! zt_poll 10 no_daemon; then
  fail "a zarrfs daemon still runs 10 s after the namespace's unmounts"
  pkill -f "zarrfs $SRC"
else
  pass "the daemons exited after unmounting"
fi
finish
