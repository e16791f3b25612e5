#!/usr/bin/env bash
# nostall-test: release-only (builds the Debian packages from the source tree; no nostall binary of a variant is used)
# The Debian packages (issue 41, debian/, docs/packaging.md), built and
# installed as a user would:
#   1. a copy of the source tree (tracked and untracked files, no build/):
#      `dpkg-buildpackage -us -uc -b` builds nostall, libnostall0,
#      libnostall-dev and their -dbgsym; lintian reports no error;
#      debian/control's Build-Depends are all in .ci/packages; the
#      changelog's version is the Makefile's; debian/gen-symbols writes
#      the checked-in symbols file from the built library;
#   2. `dpkg -i` of the three: `nostall --version` prints the installed
#      package's version; each package's Depends names the package of every
#      library its binaries link (readelf NEEDED), and every library ldd
#      loads comes from a package in the Depends closure;
#   3. `pkg-config --cflags --libs nostall`; a program built against the
#      installed -dev package (shared, then libnostall.a) mounts an mke2fs
#      image, writes and reads a file, e2fsck -fn clean;
#   4. `mount -t fuse.nostall` (the packaged /usr/sbin helper and
#      /usr/bin/nostall) of an image made by `nostall mkfs`: write, read
#      back, unmount;
#   5. `dpkg --purge`: every file the packages installed is gone, dpkg
#      knows none of them, ldconfig's cache has no libnostall.
# Needs root (dpkg -i), dpkg-buildpackage, dh and lintian (.ci/packages:
# `make test` installs them); exits 77 with the reason otherwise, and when
# nostall packages are installed already (it would replace and purge them).
set -u
cd "$(dirname "$0")/../.."
src_root=$PWD
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pkgs="nostall libnostall0 libnostall-dev"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (dpkg -i)"; exit 77; }
for tool in dpkg-buildpackage dh lintian fakeroot readelf cc pkg-config mke2fs e2fsck debugfs; do
	command -v "$tool" >/dev/null 2>&1 && continue
	echo "SKIP: $tool not on PATH (.ci/deps installs it)"
	exit 77
done
for p in $pkgs; do
	if dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.i'; then
		echo "SKIP: $p is installed on this machine; this test would replace and purge it"
		exit 77
	fi
done

tmp=$(mktemp -d /tmp/nostall-deb.XXXXXX)
installed=0
mnt=""
cleanup() {
	if [ -n "$mnt" ] && mountpoint -q "$mnt"; then
		/usr/bin/nostall umount "$mnt" 2>/dev/null || umount -l "$mnt"
	fi
	# Never leave the packages installed, whatever failed.
	[ "$installed" = 1 ] && dpkg --purge $pkgs >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# ------------------------------------------------------------ 1. build
# The tree as it is (uncommitted changes too), without build products; the
# build never writes into the source tree.
copy="$tmp/src/nostall"
mkdir -p "$copy"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		rsync -a --from0 --ignore-missing-args --files-from=- ./ "$copy/" || { echo "FAIL: copying the tree"; exit 1; }
else
	rsync -a --exclude=/build --exclude=/.git ./ "$copy/" || { echo "FAIL: copying the tree"; exit 1; }
fi
SECONDS=0
if ! (cd "$copy" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
	tail -n 40 "$tmp/build.log"
	echo "FAIL: dpkg-buildpackage -us -uc -b"
	exit 1
fi
echo "dpkg-buildpackage: ${SECONDS}s"
arch=$(dpkg --print-architecture)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
version=$(cd "$copy" && dpkg-parsechangelog -S Version)
changes="$tmp/src/nostall_${version}_$arch.changes"
[ -f "$changes" ] || { ls "$tmp/src"; echo "FAIL: no $changes"; exit 1; }
for p in $pkgs nostall-dbgsym libnostall0-dbgsym; do
	[ -f "$tmp/src/${p}_${version}_$arch.deb" ] || fail "not built: ${p}_${version}_$arch.deb"
done

# lintian: the output in full (the test log), any error fails.
lintian --fail-on error -E --display-level '>=pedantic' "$changes" >"$tmp/lintian.log" 2>&1
lrc=$?
grep -v 'running with root privileges' "$tmp/lintian.log" | sed 's/^/lintian: /'
echo "lintian: $(grep -c '^E: ' "$tmp/lintian.log") errors, $(grep -c '^W: ' "$tmp/lintian.log") warnings"
[ "$lrc" -eq 0 ] || fail "lintian reports errors (exit $lrc)"

# Build-Depends (version constraints and alternatives dropped) are in the
# one package list; debhelper-compat is debhelper's.
for bd in $(sed -n '/^Build-Depends:/,/^[A-Z]/p' debian/control | sed -e '1s/^Build-Depends://' -e '/^[A-Z]/d' |
	tr ',' '\n' | sed -e 's/[(|[].*//' -e 's/[[:space:]]//g' | grep -v '^$'); do
	[ "$bd" = debhelper-compat ] && bd=debhelper
	sed 's/#.*//' .ci/packages | grep -qx "[[:space:]]*$bd[[:space:]]*" ||
		fail "Build-Depends $bd is not in .ci/packages"
done
# The upstream part of the package version is the library's.
mk_version=$(sed -n 's/^VERSION_MAJOR := //p' Makefile).$(sed -n 's/^VERSION_MINOR := //p' Makefile)
case $version in "$mk_version" | "$mk_version"[-+~]*) ;; *) fail "debian/changelog says $version, the Makefile $mk_version" ;; esac

for p in nostall libnostall0 libnostall-dev; do
	echo "$p: Depends: $(dpkg-deb -f "$tmp/src/${p}_${version}_$arch.deb" Depends)$(
		r=$(dpkg-deb -f "$tmp/src/${p}_${version}_$arch.deb" Recommends); [ -n "$r" ] && echo "; Recommends: $r")"
done
[ "$(dpkg-deb -f "$tmp/src/nostall_${version}_$arch.deb" Recommends)" = fuse3 ] || fail "nostall does not recommend fuse3"

# ------------------------------------------------------------ 2. install
installed=1
if ! dpkg -i "$tmp/src/nostall_${version}_$arch.deb" "$tmp/src/libnostall0_${version}_$arch.deb" \
	"$tmp/src/libnostall-dev_${version}_$arch.deb" >"$tmp/dpkg.log" 2>&1; then
	cat "$tmp/dpkg.log"
	echo "FAIL: dpkg -i"
	exit 1
fi
for p in $pkgs; do dpkg -L "$p"; done | sort -u >"$tmp/files"
[ "$(/usr/bin/nostall --version)" = "nostall $(dpkg-query -W -f '${Version}' nostall)" ] ||
	fail "nostall --version says '$(/usr/bin/nostall --version)', the package is $(dpkg-query -W -f '${Version}' nostall)"
lib="/usr/lib/$ma/libnostall.so.0"
[ -e "$lib" ] || fail "$lib not installed"
gen=$(debian/gen-symbols "$(readlink -f "$lib")") || fail "debian/gen-symbols"
[ "$gen" = "$(cat debian/libnostall0.symbols)" ] ||
	fail "debian/libnostall0.symbols is not what debian/gen-symbols writes for the built library"

# The package that owns a file (dpkg knows some /lib paths under /usr/lib
# and the other way round, with merged /usr).
owner() { # path
	local p=$1 r
	[ -n "$p" ] || return 0
	for c in "$p" "$(readlink -f "$p")" "/usr${p#/usr}" "${p#/usr}"; do
		r=$(dpkg -S "$c" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$r" ] && { echo "$r"; return; }
	done
}
# Depends closure of PKG (installed packages), one name a line.
closure() {
	apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "$1" 2>/dev/null |
		sed -n 's/^\([a-z0-9][^ :]*\).*/\1/p; s/^ *\(Pre\)\{0,1\}Depends: \([^ :<>]*\).*/\2/p' | sort -u
}
check_depends() { # package file
	local pkg=$1 f=$2 dep need path o
	dep=" $(dpkg-query -W -f '${Depends}' "$pkg" | sed 's/([^)]*)//g; s/[,|]/ /g') "
	for need in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		# "NAME => PATH (ADDR)", or "PATH (ADDR)" for the dynamic loader
		path=$(ldd "$f" | awk -v n="$need" '$2 == "=>" && $1 == n { print $3 }
			$2 != "=>" && $1 ~ /^\// && $1 ~ ("/" n "$") { print $1 }')
		o=$(owner "$path")
		[ -n "$o" ] || { fail "$pkg: no package owns $need ($path)"; continue; }
		case $dep in *" $o "*) ;; *) fail "$pkg: $f needs $need from $o, Depends: $dep" ;; esac
	done
	closure "$pkg" >"$tmp/closure"
	for path in $(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $2 != "=>" && $1 ~ /^\// { print $1 }'); do
		o=$(owner "$path")
		grep -qx "$o" "$tmp/closure" || fail "$pkg: $f loads $path ($o), not in the Depends closure"
	done
}
check_depends nostall /usr/bin/nostall
check_depends libnostall0 "$(readlink -f "$lib")"

# ------------------------------------------------------------ 3. -dev
pc_out=$(pkg-config --cflags --libs nostall 2>&1) || fail "pkg-config --cflags --libs nostall: $pc_out"
echo "pkg-config --cflags --libs nostall: $pc_out"
case " $pc_out " in *" -lnostall "*) ;; *) fail "pkg-config --libs lacks -lnostall" ;; esac
[ "$(pkg-config --modversion nostall)" = "$mk_version" ] || fail "pkg-config --modversion $(pkg-config --modversion nostall)"
cat >"$tmp/prog.c" <<'EOF'
/* Built against the installed libnostall-dev only: mount IMAGE, write
 * /hello, read it back, unmount. */
#include <nostall/nostall.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	static const char msg[] = "written through the packaged libnostall\n";
	struct nostall_fs *fs;
	struct nostall_file *f;
	char back[sizeof msg];
	int rc;
	if (argc != 2)
		return 2;
	if ((rc = nostall_mount(argv[1], "data=ordered", 0, &fs)) < 0) {
		fprintf(stderr, "mount: %s\n", nostall_errmsg(rc));
		return 1;
	}
	rc = nostall_create(fs, "/hello", NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_TRUNC, 0644, &f);
	if (rc < 0 || nostall_write(f, msg, strlen(msg)) != (ssize_t)strlen(msg) || nostall_fsync(f, 0) < 0)
		return 1;
	nostall_close(f);
	if (nostall_open(fs, "/hello", NOSTALL_O_RDONLY, &f) < 0)
		return 1;
	ssize_t n = nostall_read(f, back, sizeof back);
	nostall_close(f);
	if (n != (ssize_t)strlen(msg) || memcmp(back, msg, strlen(msg)) || nostall_umount(fs) < 0)
		return 1;
	puts("ok");
	return 0;
}
EOF
run_prog() { # label cc-args...
	local label=$1 img="$tmp/$1.img"
	shift
	if ! cc -std=c17 -Wall -Wextra -Werror -o "$tmp/prog-$label" "$tmp/prog.c" "$@" >"$tmp/cc.log" 2>&1; then
		cat "$tmp/cc.log"; fail "$label: the program does not build against the installed package"; return
	fi
	mke2fs -q -F -t ext3 -b 1024 "$img" 8M >/dev/null 2>&1 || { fail "mke2fs"; return; }
	[ "$("$tmp/prog-$label" "$img" 2>&1)" = ok ] || fail "$label: the program failed"
	e2fsck -fn "$img" >/dev/null 2>&1 || fail "$label: e2fsck -fn not clean"
	[ "$(debugfs -R 'cat /hello' "$img" 2>/dev/null)" = "written through the packaged libnostall" ] ||
		fail "$label: debugfs does not read the file"
}
# shellcheck disable=SC2046 # pkg-config's words
run_prog shared $(pkg-config --cflags --libs nostall)
ldd "$tmp/prog-shared" 2>/dev/null | grep -q "libnostall.so.0 => .*/$ma/libnostall.so.0" ||
	fail "the shared program does not load the packaged libnostall.so.0"
# shellcheck disable=SC2046
run_prog static $(pkg-config --cflags nostall) $(pkg-config --static --libs nostall |
	sed 's/-lnostall/-Wl,-Bstatic -lnostall -Wl,-Bdynamic/')
readelf -d "$tmp/prog-static" 2>/dev/null | grep -q 'NEEDED.*libnostall' && fail "the static program needs libnostall.so"

# ------------------------------------------------------------ 4. mount(8)
if [ -c /dev/fuse ]; then
	img="$tmp/fs.img"
	mnt="$tmp/mnt"
	mkdir -p "$mnt"
	/usr/bin/nostall mkfs -q "$img" 32M || fail "nostall mkfs"
	# NOSTALL (set by tests/run.sh) would make the helper run the tree's
	# binary: the packaged helper must find the packaged one.
	if env -u NOSTALL PATH=/usr/sbin:/usr/bin:/sbin:/bin mount -t fuse.nostall -o data=ordered "$img" "$mnt"; then
		echo "through mount(8)" >"$mnt/greeting" || fail "write on the fuse.nostall mount"
		[ "$(cat "$mnt/greeting")" = "through mount(8)" ] || fail "read back on the fuse.nostall mount"
		grep -q " $mnt .* fuse.nostall " /proc/self/mountinfo || fail "not a fuse.nostall mount in mountinfo"
		/usr/bin/nostall umount "$mnt" || fail "nostall umount"
		mountpoint -q "$mnt" && fail "still mounted after umount"
		[ "$(/usr/bin/nostall cat "$img" /greeting 2>/dev/null)" = "through mount(8)" ] ||
			fail "the file is not in the image after umount"
		e2fsck -fn "$img" >/dev/null 2>&1 || fail "e2fsck -fn after the fuse.nostall mount"
	else
		fail "mount -t fuse.nostall"
	fi
else
	echo "SKIP: no /dev/fuse: mount -t fuse.nostall not run"
fi

# ------------------------------------------------------------ 5. purge
dpkg --purge $pkgs >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg --purge"; }
installed=0
for p in $pkgs; do
	dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^[^u ]' &&
		fail "$p still known to dpkg after purge: $(dpkg-query -W -f '${db:Status-Abbrev}' "$p")"
done
left=0
while IFS= read -r f; do
	[ -d "$f" ] && [ ! -L "$f" ] && continue # shared directories (/usr/bin) stay
	if [ -e "$f" ] || [ -L "$f" ]; then fail "left after purge: $f"; left=$((left + 1)); fi
done <"$tmp/files"
[ -d /usr/include/nostall ] && fail "left after purge: /usr/include/nostall/"
[ -d /usr/share/doc/nostall ] && fail "left after purge: /usr/share/doc/nostall/"
ldconfig -p | grep -q libnostall && fail "ldconfig's cache still has libnostall after purge"
[ "$(wc -l <"$tmp/files")" -ge 20 ] || fail "only $(wc -l <"$tmp/files") paths in the packages"

cd "$src_root" || exit 1
[ "$fails" -eq 0 ] || exit 1
echo "deb_package: ok ($version: $pkgs built, lintian without errors, installed, used, purged)"
