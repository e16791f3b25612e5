/* libFuzzer target: mount a mutated ext3 image held in a mem: device and walk
 * it through the public API: info and every group descriptor, a bounded
 * recursive readdir, stat of every entry, read of (the start and a far
 * offset of) every regular file, bmap, readlink, listxattr/getxattr, path
 * lookups with "..", symlinks and trailing slashes. Every call may fail;
 * none may crash, hang, leak or trip a sanitizer.
 *
 * Built and run by fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined).
 * tests/test_fuzz_regress.c replays tests/fuzz-regress/ through the same
 * fuzz_walk_image() without libFuzzer (FUZZ_NO_MAIN).
 */
#include "fuzz_walk.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_walk_image(data, size);
	return 0;
}
