/* Aligned block memory for caches (page cache pages, buffer cache data,
 * journal log copies): blocks of 512..4096 bytes (a power of two), aligned
 * to their size, carved from chunks mapped with mmap: 256 KiB ones for a
 * class's first 2 MiB, then 2 MiB ones aligned for and advised to be
 * transparent huge pages (a cache filling up faults in one page per 2 MiB
 * instead of 512: on the VMs we measure on, a fresh 4 KiB page costs ~14 us
 * and a fresh huge page ~3.4 ms). Blocks blockmem_trim releases lose
 * that advice: reused sparsely, they would fault in (or khugepaged would
 * collapse) 2 MiB around each.
 *
 * Why: posix_memalign(4096, 4096) from glibc takes about twice the block
 * from the heap (the alignment slack is returned as a small free fragment
 * that block-sized requests cannot reuse), so a cache of N blocks had an
 * RSS near 2N. Here a freed block goes on its size's free list and is the
 * next one handed out; chunks are never unmapped (the caches' budgets bound
 * how many blocks are live at once, and so the free lists), and freed
 * blocks stay resident until blockmem_trim, which a cache calls when it is
 * destroyed, hands free 4 KiB blocks past 4 MiB back to the kernel
 * (MADV_DONTNEED), so the RSS falls then. Under AddressSanitizer the plain allocator is used, so
 * use-after-free is still caught.
 *
 * Thread-safe (one mutex). blockmem_free takes the size given to
 * blockmem_alloc.
 */
#ifndef NOSTALL_UTIL_BLOCKMEM_H
#define NOSTALL_UTIL_BLOCKMEM_H

#include <stddef.h>

/* size: 512, 1024, 2048 or 4096 (other sizes: posix_memalign/free,
 * aligned to a power-of-two size below a page, else to a page from 4096
 * up, else to a pointer). NULL when out of memory or size is 0. The
 * contents are undefined. */
void *blockmem_alloc(size_t size);
void blockmem_free(void *p, size_t size);
/* Give free 4 KiB blocks past 4 MiB back to the kernel (they stay ours and
 * are handed out again last). Called when a cache is destroyed. */
void blockmem_trim(void);
/* A long-lived I/O buffer of `bytes` (4 KiB-aligned, freed with free()).
 * From 1 MiB up it is rounded up to whole 2 MiB transparent huge pages,
 * 2 MiB-aligned, with MADV_HUGEPAGE: an O_DIRECT transfer pins its memory
 * page by page, and on the VMs we measure on a transfer in 4 KiB pages runs
 * at about half the rate (docs/bench-fs.md, "Huge pages"). For buffers
 * that are kept and reused, not for one-off allocations (the first touch of
 * a huge page clears all 2 MiB). */
void *blockmem_huge_alloc(size_t bytes);

#endif
