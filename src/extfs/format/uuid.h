/* UUIDs in their text form (superblock s_uuid, mkfs -U, reports). Pure. */
#ifndef NOSTALL_EXT3_UUID_H
#define NOSTALL_EXT3_UUID_H

#include <stdint.h>

/* Parse "01234567-89ab-cdef-0123-456789abcdef" (-EINVAL with a message). */
int ext3_uuid_parse(const char *s, uint8_t out[16]);
void ext3_uuid_format(const uint8_t uuid[16], char out[37]);

#endif
