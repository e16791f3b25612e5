/* libFuzzer target: mount a mutated ext3 image held in a mem: device
 * read-write, change it through the public API, unmount, and walk what the
 * writes left (fuzz_write.h). Every call may fail; none may crash, hang,
 * leak or trip a sanitizer.
 *
 * Built and run by fuzz/run.sh with FUZZ_TARGET=write. tests/test_fuzz_regress.c
 * replays tests/fuzz-regress/ through the same fuzz_write_image()
 * without libFuzzer.
 */
#include "fuzz_write.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_write_image(data, size, NULL);
	return 0;
}
