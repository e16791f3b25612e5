#include "util/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int array_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return 0;
	void *old;
	memcpy(&old, v, sizeof old); /* v points at a typed pointer: copy, no aliasing */
	size_t ncap = *cap ? *cap * 2 : first;
	void *nv = realloc(old, ncap * elem);
	if (!nv)
		return -ENOMEM;
	memcpy(v, &nv, sizeof nv);
	*cap = ncap;
	return 0;
}
