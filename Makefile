# nostall build.
#   make                 -> build/nostall (release, gcc by default; CC=clang works)
#   make test            -> unit + CLI tests: release, ASan+UBSan, TSan (concurrent tests),
#                           plus a clang -Werror build; ends with "N passed, N failed"
#   make VARIANT=asan    -> build/asan/...   (VARIANT = release | asan | tsan)
CC ?= gcc
VARIANT ?= release

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
CPPFLAGS += -D_GNU_SOURCE -Isrc -Iinclude
# The write API links (issue 8): build the nostall target of the model-based tests.
CPPFLAGS += -DNOSTALL_HAVE_WRITE_API
WFLAGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ALLCFLAGS := -std=c17 -g -pthread $(WFLAGS) $(VFLAGS) $(CFLAGS) -MMD -MP
LDLIBS := -luring -lpthread -lm
TEST_LDLIBS := -lcmocka $(LDLIBS)
# libfuse3 for the FUSE daemon (tools/fuse/, docs/fuse.md): the binary only.
CPPFLAGS += $(shell pkg-config --cflags fuse3)
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

.PHONY: all lib tests test clean check-clang check-layers
all: $(BUILD)/nostall

lib: $(BUILD)/libnostall.a

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALLCFLAGS) -c $< -o $@

$(BUILD)/libnostall.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/nostall: $(TOOL_OBJS) $(BUILD)/libnostall.a
	$(CC) $(ALLCFLAGS) -o $@ $(TOOL_OBJS) $(BUILD)/libnostall.a $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTLIB_OBJS) $(BUILD)/libnostall.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -o $@ $< $(TESTLIB_OBJS) $(BUILD)/libnostall.a $(TEST_LDLIBS)

tests: $(TEST_BINS) $(BUILD)/nostall

# The whole test command (README): every variant, then the summary line.
test: check-layers
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

-include $(LIB_OBJS:.o=.d) $(TOOL_OBJS:.o=.d) $(TESTLIB_OBJS:.o=.d) $(TEST_BINS:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.d)

# The main job: build, then the block-layer reproduction on the default
# simulated disk (README).
.PHONY: bench
bench: all
	$(BUILD)/nostall bench blk
