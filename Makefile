# nostall build.
#   make                 -> build/nostall (release, gcc by default; CC=clang works)
#   make test            -> unit + CLI tests: release, ASan+UBSan, TSan (concurrent tests),
#                           plus a clang -Werror build; ends with "N passed, N failed"
#   make VARIANT=asan    -> build/asan/...   (VARIANT = release | asan | tsan)
#   make install         -> PREFIX=/usr/local, DESTDIR= (docs/packaging.md);
#                           make uninstall, make shared
#   make deb             -> dpkg-buildpackage -us -uc -b (debian/, docs/packaging.md)
# CFLAGS, CPPFLAGS and LDFLAGS from the environment or the command line are
# added to the project's own flags (dpkg-buildflags' hardening flags, say);
# they never replace -Wall -Wextra -Werror or a variant's sanitizer flags.
# `make test` and `make bench` first install the packages they miss (.ci/deps).
CC ?= gcc
VARIANT ?= release
# The library's version (SONAME major, docs/packaging.md) and the version
# `nostall --version` prints: debian/rules sets NOSTALL_VERSION to the
# Debian package's version, which may carry a suffix (a local rebuild).
VERSION_MAJOR := 0
VERSION_MINOR := 1
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR)
NOSTALL_VERSION ?= $(VERSION)

ifeq ($(VARIANT),release)
BUILD := build
VFLAGS := -O2
else ifeq ($(VARIANT),asan)
BUILD := build/asan
VFLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(VARIANT),tsan)
BUILD := build/tsan
VFLAGS := -O1 -fsanitize=thread -fno-omit-frame-pointer
else ifeq ($(VARIANT),clang)
BUILD := build/clang
VFLAGS := -O2
CC := clang
else
$(error unknown VARIANT $(VARIANT))
endif

CFLAGS ?=
LDFLAGS ?=
override CPPFLAGS += -D_GNU_SOURCE -Isrc -Iinclude
# Test builds (issue 35): NOSTALL_TEST_HOOKS compiles the test-only switches
# (jbd_debug_skip_ordered: NOSTALL_DEBUG_SKIP_ORDERED), NOSTALL_LOCKDEP the
# lock-order checker (src/util/lockdep.h). The release library has neither
# (tests/cli/release_no_debug_hooks.sh); the asan and tsan variants are test
# builds and have both; every variant's `make tests` builds
# $(BUILD)/nostall-testhooks, the CLI with both (release: from its own
# objects under $(BUILD)/hooks), and links test_lockdep with them.
HOOKS_DEFS := -DNOSTALL_TEST_HOOKS -DNOSTALL_LOCKDEP
ifneq ($(filter asan tsan,$(VARIANT)),)
override CPPFLAGS += $(HOOKS_DEFS)
HOOKS_OBJDIR := $(BUILD)/obj
HOOKS_LIB := $(BUILD)/libnostall.a
else
HOOKS_OBJDIR := $(BUILD)/hooks/obj
HOOKS_LIB := $(BUILD)/hooks/libnostall.a
endif
# The write API links (issue 8): build the nostall target of the model-based tests.
override CPPFLAGS += -DNOSTALL_HAVE_WRITE_API
WFLAGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ALLCFLAGS := -std=c17 -g -pthread $(WFLAGS) $(VFLAGS) $(CFLAGS) -MMD -MP
LDLIBS := -luring -lpthread -lm
LDLIBS += -lnbd
TEST_LDLIBS := -lcmocka $(LDLIBS)
# libfuse3 for the FUSE daemon (tools/fuse/, docs/fuse.md): the binary only.
override CPPFLAGS += $(shell pkg-config --cflags fuse3)
LDLIBS += $(shell pkg-config --libs fuse3)

LIB_SRCS := $(sort $(shell find src -name "*.c"))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
TOOL_SRCS := $(sort $(shell find tools -name "*.c"))
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
# Shared test support (models, targets) linked into every test binary.
TESTLIB_SRCS := $(sort $(wildcard tests/lib/*.c))
TESTLIB_OBJS := $(TESTLIB_SRCS:%.c=$(BUILD)/obj/%.o)
.SECONDARY: $(TESTLIB_OBJS)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
# The model-based exerciser (docs/exerciser.md): plain POSIX, no libnostall.
FSX_SRCS := $(sort $(wildcard tests/fsx/*.c))
FSX_OBJS := $(FSX_SRCS:%.c=$(BUILD)/obj/%.o)

.PHONY: all lib tests test clean check-clang check-layers
all: $(BUILD)/nostall

lib: $(BUILD)/libnostall.a

# Objects depend on the compiler flags they were built with: a change of
# CC, CPPFLAGS or CFLAGS rebuilds them (a stale -D left link errors).
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW := $(CC) $(CPPFLAGS) $(ALLCFLAGS) $(LDFLAGS) $(NOSTALL_VERSION)
$(shell mkdir -p $(BUILD); [ "`cat $(FLAGS_STAMP) 2>/dev/null`" = '$(FLAGS_NOW)' ] || echo '$(FLAGS_NOW)' > $(FLAGS_STAMP))

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALLCFLAGS) -c $< -o $@

$(BUILD)/libnostall.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/nostall: $(TOOL_OBJS) $(BUILD)/libnostall.a
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -o $@ $(TOOL_OBJS) $(BUILD)/libnostall.a $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTLIB_OBJS) $(BUILD)/libnostall.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -o $@ $< $(TESTLIB_OBJS) $(BUILD)/libnostall.a $(TEST_LDLIBS) $(TEST_WRAP)

$(BUILD)/obj/tools/cli/nostall.o $(HOOKS_OBJDIR)/tools/cli/nostall.o: \
	override CPPFLAGS += -DNOSTALL_VERSION='"$(NOSTALL_VERSION)"'

# The CLI and test_lockdep built with the test hooks (HOOKS_DEFS above).
HOOKS_LIB_OBJS := $(LIB_SRCS:%.c=$(HOOKS_OBJDIR)/%.o)
HOOKS_TOOL_OBJS := $(TOOL_SRCS:%.c=$(HOOKS_OBJDIR)/%.o)
.SECONDARY: $(HOOKS_LIB_OBJS) $(HOOKS_TOOL_OBJS) $(HOOKS_OBJDIR)/tests/test_lockdep.o
$(BUILD)/hooks/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(HOOKS_DEFS) $(ALLCFLAGS) -c $< -o $@

$(BUILD)/hooks/libnostall.a: $(HOOKS_LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/nostall-testhooks: $(HOOKS_TOOL_OBJS) $(HOOKS_LIB)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -o $@ $(HOOKS_TOOL_OBJS) $(HOOKS_LIB) $(LDLIBS)

$(BUILD)/tests/test_lockdep: $(HOOKS_OBJDIR)/tests/test_lockdep.o $(TESTLIB_OBJS) $(HOOKS_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -o $@ $< $(TESTLIB_OBJS) $(HOOKS_LIB) $(TEST_LDLIBS)

# Fault injection without hooks in the library: a test binary may wrap
# library functions it fails on purpose (ld --wrap: the library's calls
# reach the test's __wrap_NAME, which calls __real_NAME).
$(BUILD)/tests/test_ext3_write_errors: TEST_WRAP := -Wl,--wrap=jbd_inode_create -Wl,--wrap=jbd_inode_file

# bench repro's verdict logic is the tool's, tested alone (issue 40).
$(BUILD)/tests/test_repro_verdict: $(BUILD)/obj/tools/bench/repro_verdict.o
$(BUILD)/tests/test_repro_verdict: TEST_WRAP := $(BUILD)/obj/tools/bench/repro_verdict.o

tests: $(TEST_BINS) $(BUILD)/nostall $(BUILD)/nostall-testhooks $(BUILD)/fsx
# The shared library is built with the release tests so that
# tests/cli/install_pkgconfig.sh finds it ready (and it cannot rot).
ifeq ($(VARIANT),release)
tests: shared
endif

$(BUILD)/fsx: $(FSX_OBJS)
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -o $@ $^

# The whole test command (README): the packages it needs (.ci/deps), every
# variant, then the summary line.
test:
	@.ci/deps
	$(MAKE) --no-print-directory check-layers
	$(MAKE) --no-print-directory VARIANT=release tests
	$(MAKE) --no-print-directory VARIANT=asan tests
	$(MAKE) --no-print-directory VARIANT=tsan tests
	$(MAKE) --no-print-directory VARIANT=clang all
	tests/run.sh

# Includes point down the layer order of docs/architecture.md.
check-layers:
	@python3 tests/lib/check_layers.py

clean:
	rm -rf build

# ------------------------------------------------------------------ install
# docs/packaging.md. The shared library is built from its own -fPIC objects
# ($(BUILD)/pic), so the static library, the binary and the tests keep their
# non-PIC code. Its version script (src/libnostall.map) exports the public
# nostall_* API only; the SONAME carries the major version, which changes
# whenever that API changes incompatibly.
SONAME := libnostall.so.$(VERSION_MAJOR)
SHLIB := libnostall.so.$(VERSION)
# The library's own link dependencies (LDLIBS may gain the tools' ones).
LIB_LDLIBS := -luring -lnbd -lpthread -lm
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL ?= install
PIC_OBJS := $(LIB_SRCS:%.c=$(BUILD)/pic/%.o)
HEADERS := $(sort $(wildcard include/nostall/*.h))
MANPAGES := $(sort $(wildcard man/*.[1-8]))
# The mount(8) helper of the FUSE daemon (docs/fuse.md). mount(8) looks for
# it in /sbin (= /usr/sbin with merged /usr) only: with PREFIX=/usr/local,
# install it with HELPERDIR=/usr/sbin (docs/packaging.md).
MOUNT_HELPER := $(wildcard tools/fuse/mount.fuse.nostall)
HELPERDIR ?= $(SBINDIR)
# In nostall.pc, paths under PREFIX are written relative to ${prefix}.
pc_rel = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

.PHONY: shared install uninstall deb
shared: $(BUILD)/$(SHLIB)

$(BUILD)/pic/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALLCFLAGS) -fPIC -c $< -o $@

$(BUILD)/$(SHLIB): $(PIC_OBJS) src/libnostall.map
	$(CC) $(ALLCFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libnostall.map \
		-Wl,--no-undefined -Wl,--as-needed -o $@ $(PIC_OBJS) $(LIB_LDLIBS)

$(BUILD)/nostall.pc: nostall.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@LIBS_PRIVATE@|$(filter-out -luring -lnbd,$(LIB_LDLIBS))|' $< > $@
# PREFIX and the directories are make variables: rebuild the file every time.
.PHONY: $(BUILD)/nostall.pc

install: all shared $(BUILD)/nostall.pc
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(INCLUDEDIR)/nostall
	$(INSTALL) -m 755 $(BUILD)/nostall $(DESTDIR)$(BINDIR)/nostall
	$(INSTALL) -m 644 $(BUILD)/libnostall.a $(DESTDIR)$(LIBDIR)/libnostall.a
	$(INSTALL) -m 755 $(BUILD)/$(SHLIB) $(DESTDIR)$(LIBDIR)/$(SHLIB)
	ln -sf $(SHLIB) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libnostall.so
	$(INSTALL) -m 644 $(HEADERS) $(DESTDIR)$(INCLUDEDIR)/nostall/
	$(INSTALL) -m 644 $(BUILD)/nostall.pc $(DESTDIR)$(PKGCONFIGDIR)/nostall.pc
	for m in $(MANPAGES); do \
		sec=$${m##*.}; $(INSTALL) -d $(DESTDIR)$(MANDIR)/man$$sec && \
		$(INSTALL) -m 644 $$m $(DESTDIR)$(MANDIR)/man$$sec/ || exit 1; \
	done
ifneq ($(MOUNT_HELPER),)
	$(INSTALL) -d $(DESTDIR)$(HELPERDIR)
	$(INSTALL) -m 755 $(MOUNT_HELPER) $(DESTDIR)$(HELPERDIR)/mount.fuse.nostall
endif
	if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig || true; fi

# The Debian packages (debian/, docs/packaging.md): nostall, libnostall0,
# libnostall-dev and their -dbgsym, written to the parent directory as
# dpkg-buildpackage does. The package build uses its own build directory
# (debian/build), so this leaves build/ alone.
deb:
	dpkg-buildpackage -us -uc -b

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/nostall $(DESTDIR)$(HELPERDIR)/mount.fuse.nostall \
		$(DESTDIR)$(LIBDIR)/libnostall.a $(DESTDIR)$(LIBDIR)/$(SHLIB) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libnostall.so \
		$(DESTDIR)$(PKGCONFIGDIR)/nostall.pc \
		$(addprefix $(DESTDIR)$(INCLUDEDIR)/nostall/,$(notdir $(HEADERS)))
	for m in $(MANPAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/}; done
	-rmdir $(DESTDIR)$(INCLUDEDIR)/nostall 2>/dev/null
	if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig || true; fi

-include $(LIB_OBJS:.o=.d) $(PIC_OBJS:.o=.d) $(HOOKS_LIB_OBJS:.o=.d) $(HOOKS_TOOL_OBJS:.o=.d) $(FSX_OBJS:.o=.d) $(TOOL_OBJS:.o=.d) $(TESTLIB_OBJS:.o=.d) $(TEST_BINS:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.d)

# The main job: build, then the block-layer reproduction on the default
# simulated disk (README).
.PHONY: bench
# The packages first (.ci/deps), then the build in a new make that sees them
# (pkg-config --cflags fuse3 is read when the Makefile is).
bench:
	@.ci/deps
	$(MAKE) --no-print-directory all
	$(BUILD)/nostall bench repro --quick --out $(BUILD)/repro
