/* Growing arrays. */
#ifndef NOSTALL_UTIL_ARRAY_H
#define NOSTALL_UTIL_ARRAY_H

#include <stddef.h>

/* Make room for one more element in the growing array *v (v is the address
 * of the caller's typed array pointer) holding n elements of elem bytes, with
 * capacity *cap, doubling from `first`. 0, or -ENOMEM (the array and *cap
 * unchanged). */
int array_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first);

#endif
