#!/usr/bin/env bash
# `make install DESTDIR=...` (docs/packaging.md): the installed tree has the
# binary, both libraries, the headers, nostall.pc and the man pages; a small
# C program built from `pkg-config --cflags --libs nostall` alone (shared, then
# `--static` against libnostall.a) mounts an mke2fs image read-write, writes a
# file, reads it back and unmounts; e2fsck -fn finds the image clean and
# debugfs reads the same bytes. The shared library carries the SONAME
# libnostall.so.MAJOR and exports the public nostall_* functions only, each
# declared in include/nostall/. `make uninstall` removes every file again.
# Run by tests/run.sh ($NOSTALL is not used: the release build is installed).
set -u
cd "$(dirname "$0")/../.."
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for tool in cc pkg-config readelf nm mke2fs e2fsck debugfs; do
	command -v "$tool" >/dev/null 2>&1 && continue
	echo "SKIP: $tool not on PATH"
	exit 77
done

tmp=$(mktemp -d /tmp/nostall-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dest="$tmp/dest"
prefix=/usr/local

# After `make tests` (release) everything is built and this only copies.
if ! make -s install DESTDIR="$dest" PREFIX="$prefix" >"$tmp/make.log" 2>&1; then
	cat "$tmp/make.log"
	echo "FAIL: make install"
	exit 1
fi

major=$(sed -n 's/^VERSION_MAJOR := //p' Makefile)
minor=$(sed -n 's/^VERSION_MINOR := //p' Makefile)
lib="$dest$prefix/lib"
for f in bin/nostall lib/libnostall.a "lib/libnostall.so.$major.$minor" \
	include/nostall/nostall.h lib/pkgconfig/nostall.pc share/man/man1/nostall.1 \
	share/man/man8/nostall-mount.8; do
	[ -f "$dest$prefix/$f" ] || fail "not installed: $prefix/$f"
done
if [ -e tools/fuse/mount.fuse.nostall ]; then
	[ -x "$dest$prefix/sbin/mount.fuse.nostall" ] || fail "not installed: $prefix/sbin/mount.fuse.nostall"
	# It finds the installed binary through ../bin (NOSTALL unset).
	env -u NOSTALL "$dest$prefix/sbin/mount.fuse.nostall" 2>&1 | grep -q usage ||
		fail "mount.fuse.nostall does not run"
fi
[ "$(readlink "$lib/libnostall.so.$major")" = "libnostall.so.$major.$minor" ] ||
	fail "libnostall.so.$major does not point at libnostall.so.$major.$minor"
[ "$(readlink "$lib/libnostall.so")" = "libnostall.so.$major" ] ||
	fail "libnostall.so (the link-time name) does not point at libnostall.so.$major"
"$dest$prefix/bin/nostall" 2>&1 | grep -q 'usage' || fail "installed nostall does not run"

# SONAME and the exported symbols.
so="$lib/libnostall.so.$major.$minor"
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libnostall.so.$major" ] || fail "SONAME is '$soname', want libnostall.so.$major"
nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u >"$tmp/exported"
grep -v '^nostall_' "$tmp/exported" >"$tmp/stray" && fail "exported beyond nostall_*: $(head -5 "$tmp/stray" | tr '\n' ' ')"
grep -ho 'nostall_[a-z0-9_]*(' include/nostall/*.h | tr -d '(' | sort -u >"$tmp/declared"
comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/undeclared"
[ -s "$tmp/undeclared" ] && fail "exported but not in include/nostall/: $(head -5 "$tmp/undeclared" | tr '\n' ' ')"
comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/missing"
[ -s "$tmp/missing" ] && fail "declared but not exported: $(head -5 "$tmp/missing" | tr '\n' ' ')"
[ "$(wc -l <"$tmp/exported")" -ge 50 ] || fail "only $(wc -l <"$tmp/exported") symbols exported"
# Internal functions of the static library do not leak.
nm -D "$so" | grep -qw 'ext3_fs_mount\|blk_queue_create\|jbd_config_set' &&
	fail "internal functions are exported"

cat >"$tmp/prog.c" <<'EOF'
/* Built only from the installed tree: mount IMAGE, write /hello, read it
 * back, unmount. */
#include <nostall/nostall.h>
#include <stdio.h>
#include <string.h>

static int die(const char *what, int rc)
{
	fprintf(stderr, "%s: %s\n", what, nostall_errmsg(rc));
	return 1;
}

int main(int argc, char **argv)
{
	static const char msg[] = "written through the installed libnostall\n";
	struct nostall_fs *fs;
	struct nostall_file *f;
	char back[sizeof msg];
	int rc;
	if (argc != 3)
		return 2;
	if ((rc = nostall_mount(argv[1], argv[2], 0, &fs)) < 0)
		return die("mount", rc);
	if ((rc = nostall_mkdir(fs, "/dir", 0755)) < 0)
		return die("mkdir", rc);
	rc = nostall_create(fs, "/dir/hello", NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_TRUNC,
			    0644, &f);
	if (rc < 0)
		return die("create", rc);
	if (nostall_write(f, msg, strlen(msg)) != (ssize_t)strlen(msg))
		return die("write", -5);
	if ((rc = nostall_fsync(f, 0)) < 0)
		return die("fsync", rc);
	nostall_close(f);
	if ((rc = nostall_open(fs, "/dir/hello", NOSTALL_O_RDONLY, &f)) < 0)
		return die("open", rc);
	ssize_t n = nostall_read(f, back, sizeof back);
	nostall_close(f);
	if (n != (ssize_t)strlen(msg) || memcmp(back, msg, strlen(msg)))
		return die("read back", -5);
	if ((rc = nostall_umount(fs)) < 0)
		return die("umount", rc);
	puts("ok");
	return 0;
}
EOF

export PKG_CONFIG_PATH="$lib/pkgconfig"
# --define-prefix: prefix= is taken from where nostall.pc lies (DESTDIR tree).
pc() { pkg-config --define-prefix "$@" nostall; }
pc --exists || fail "pkg-config does not find nostall in $PKG_CONFIG_PATH"
[ "$(pc --modversion)" = "$major.$minor" ] || fail "pkg-config version $(pc --modversion)"
cflags=$(pc --cflags)
case $cflags in *"$dest$prefix/include"*) ;; *) fail "cflags '$cflags' miss the include dir" ;; esac

build_and_run() { # label extra-cc-args...
	local label=$1 img="$tmp/$1.img" out
	shift
	if ! cc -std=c17 -Wall -Wextra -Werror -o "$tmp/prog-$label" "$tmp/prog.c" "$@" 2>"$tmp/cc.log"; then
		cat "$tmp/cc.log"
		fail "$label: the program does not build"
		return
	fi
	mke2fs -q -F -t ext3 -b 1024 "$img" 8M >/dev/null 2>&1 || { fail "mke2fs"; return; }
	out=$(LD_LIBRARY_PATH="$lib" "$tmp/prog-$label" "$img" data=ordered 2>&1)
	[ "$out" = ok ] || fail "$label: program said: $out"
	e2fsck -fn "$img" >"$tmp/fsck.log" 2>&1 || { cat "$tmp/fsck.log"; fail "$label: e2fsck -fn not clean"; }
	[ "$(debugfs -R 'cat /dir/hello' "$img" 2>/dev/null)" = "written through the installed libnostall" ] ||
		fail "$label: debugfs does not read the file back"
}

# Shared: the program needs libnostall.so.MAJOR at run time (and nothing else
# of ours), and that is the installed one.
build_and_run shared $cflags $(pc --libs)
if [ -x "$tmp/prog-shared" ]; then
	readelf -d "$tmp/prog-shared" | grep -q "NEEDED.*\[libnostall.so.$major\]" ||
		fail "shared program does not need libnostall.so.$major"
	LD_LIBRARY_PATH="$lib" ldd "$tmp/prog-shared" | grep -q "libnostall.so.$major => $lib/" ||
		fail "shared program does not load the installed library"
fi

# Static: libnostall linked statically (-Wl,-Bstatic around -lnostall) with
# the dependencies `pkg-config --static --libs` adds (Requires.private:
# liburing, libnbd; Libs.private) linked as the system has them. Not -static:
# Debian's libnbd.a needs gnutls and libxml2 archives its .pc does not name.
static_libs=$(pc --static --libs | sed 's/-lnostall/-Wl,-Bstatic -lnostall -Wl,-Bdynamic/')
build_and_run static $cflags $static_libs
if [ -x "$tmp/prog-static" ]; then
	readelf -d "$tmp/prog-static" | grep -q 'NEEDED.*libnostall' &&
		fail "static program needs libnostall.so"
	nm "$tmp/prog-static" | grep -q ' T nostall_mount$' || fail "static program lacks nostall_mount"
fi

# Uninstall leaves no file behind (directories may stay).
make -s uninstall DESTDIR="$dest" PREFIX="$prefix" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; fail "make uninstall"; }
left=$(find "$dest" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $(echo $left | head -c 300)"

# The Debian packages: tests/cli/deb_package.sh.

[ "$fails" -eq 0 ] || exit 1
echo "install_pkgconfig: ok (soname libnostall.so.$major, $(wc -l <"$tmp/exported") symbols)"
