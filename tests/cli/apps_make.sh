#!/usr/bin/env bash
# nostall-test: release-only (long application run; its C code runs under ASan in the unit tests)
# A parallel build on the FUSE mount in every data mode
# (tests/lib/apps_common.sh): a generated C project (modules, a shared
# header, a static library, a program) is built with make -j, the program
# prints the expected sum; a second make has nothing to do; touching one
# module rebuilds exactly that object and the link; make clean leaves only
# the sources. Then unmount, e2fsck -fn and the kernel's view. CI: 60
# modules; NOSTALL_APPS_FULL=1: 400.
. "$(dirname "$0")/../lib/apps_common.sh"
apps_need_fuse
apps_need make:make cc:gcc ar:binutils
NMOD=$(apps_size 60 400 20)
echo "apps_make: $NMOD modules, make -j4, modes: $APPS_MODES"

gen_project() { # dir
	local d=$1 i
	mkdir -p "$d/src" "$d/include"
	printf '#ifndef MODS_H\n#define MODS_H\n' >"$d/include/mods.h"
	for ((i = 0; i < NMOD; i++)); do
		printf 'long mod%d(long x);\n' "$i" >>"$d/include/mods.h"
		cat >"$d/src/mod$i.c" <<C
#include "mods.h"
/* module $i */
long mod$i(long x)
{
	long acc = x;
	for (int k = 0; k < $((i % 7 + 3)); k++)
		acc = acc * 3 + $i;
	return acc % 1000003 + $i;
}
C
	done
	printf '#endif\n' >>"$d/include/mods.h"
	{
		echo '#include <stdio.h>'
		echo '#include "mods.h"'
		echo 'int main(void) { long s = 0;'
		for ((i = 0; i < NMOD; i++)); do echo "s += mod$i($i);"; done
		echo 'printf("%ld\n", s); return 0; }'
	} >"$d/src/main.c"
	cat >"$d/Makefile" <<'M'
SRCS := $(wildcard src/mod*.c)
OBJS := $(SRCS:src/%.c=obj/%.o)
CFLAGS := -O1 -Iinclude -MMD -MP
prog: obj/main.o libmods.a
	$(CC) -o $@ $^
libmods.a: $(OBJS)
	rm -f $@
	ar rcs $@ $^
obj/%.o: src/%.c
	@mkdir -p obj
	$(CC) $(CFLAGS) -c $< -o $@
clean:
	rm -rf obj libmods.a prog
-include $(OBJS:.o=.d) obj/main.d
M
}

# The expected output, computed by the same project built on the host.
gen_project "$APPS_TMP/ref"
make -s -C "$APPS_TMP/ref" -j4 >/dev/null 2>&1 || { echo "FAIL: the project does not build on the host"; exit 1; }
want=$("$APPS_TMP/ref/prog")

make_work() { # mnt mode
	local d=$1/proj out
	gen_project "$d"
	# The generated sources' mtimes are in the past, so a rebuild is by
	# content of the dependency graph, not by a clock tie.
	find "$d" -type f -exec touch -d '-1 hour' {} +
	make -s -C "$d" -j4 >"$APPS_TMP/make.log" 2>&1 || { cat "$APPS_TMP/make.log"; fail "data=$2: make -j4"; return; }
	[ "$("$d/prog")" = "$want" ] || fail "data=$2: the program prints $("$d/prog"), want $want"
	out=$(make -C "$d" -j4 2>&1)
	echo "$out" | grep -q "Nothing to be done\|is up to date" ||
		fail "data=$2: a second make rebuilt: $(echo "$out" | head -3)"
	touch "$d/src/mod3.c"
	out=$(make -C "$d" -j4 2>&1 | grep -c -- ' -c ')
	[ "$out" = 1 ] || fail "data=$2: touching one module recompiled $out files"
	[ "$("$d/prog")" = "$want" ] || fail "data=$2: the relinked program is wrong"
	make -s -C "$d" clean >/dev/null 2>&1 || fail "data=$2: make clean"
	[ -z "$(find "$d" -name '*.o' -o -name '*.d' -o -name prog -o -name '*.a')" ] ||
		fail "data=$2: make clean left files"
	make -s -C "$d" -j4 >"$APPS_TMP/make.log" 2>&1 || fail "data=$2: the rebuild after clean"
}

for mode in $APPS_MODES; do
	apps_cycle "$mode" 256M make_work
done
apps_finish apps_make
