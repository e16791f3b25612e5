/* ext3 mount options, with Linux's names (docs/ext3-read-path.md, "Mount
 * options"). Pure parsing and validation: nothing here touches a device.
 *
 * Read side (acted on today): ro, noload, fakeroot (the API's default
 * credentials: root's), sb=, cache=, readahead=,
 * file_readahead=, dirty_ratio=, dirty_background_ratio=, dirty_min= (the
 * page cache's dirty limits), dirty_expire_centisecs=,
 * dirty_writeback_centisecs= (its flusher's ages) and every block-queue tunable or era preset
 * (collected into one string, checked with blk_opts_validate, applied to
 * the queue at mount). Write side (parsed, validated and stored for the write path):
 * data=, commit=, barrier=, nobarrier, journal_ioprio= (the journal's own
 * names, through jbd_config_set), errors=, data_err=, noatime, relatime,
 * strictatime. An unknown name, a bad value or two options that contradict
 * each other fail with -EINVAL and a message naming the option.
 *
 * data= not given stays 0 here: the mount then takes the superblock's
 * default mount options (journal/ordered/writeback bits), else the build's
 * EXT3_DATA_MODE_DEFAULT, which is data=guarded (docs/write-guarded.md).
 */
#include "extfs/core/ext3.h"

#include "blk/blk.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/tunable.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Default maximum readahead window of an open file (file_readahead=). The
 * reader keeps up to twice it in flight (file_read.c) in segments of a
 * quarter of it: with 2M a segment is 512 KiB, max_sectors_kb's default,
 * one request. With 1M (256 KiB segments) a 1 GiB read took 4,620 device
 * commands instead of 2,572 and kept the device busy 10-15 % longer; since
 * the segments moved into huge pages the L2 argument that had made 1M win
 * (docs/ext3-read-path.md "Sizes") no longer holds. sim:hdd: the same. */
#define FILE_READAHEAD_DEFAULT (2u << 20)

void ext3_mount_opts_init(struct ext3_mount_opts *o)
{
	memset(o, 0, sizeof *o);
	o->readahead_blocks = -1;
	o->file_readahead = FILE_READAHEAD_DEFAULT;
	o->fsync_in_commit = true;
	page_params_default(&o->page);
	o->page.dirty_min_kb = EXT3_DIRTY_MIN_DEFAULT / 1024;
	jbd_config_default(&o->jcfg);
}

void ext3_mount_opts_release(struct ext3_mount_opts *o)
{
	if (!o)
		return;
	free(o->blk_opts);
	o->blk_opts = NULL;
}

struct opts_ctx {
	struct ext3_mount_opts *o;
	size_t blk_len, blk_cap;
};

static int blk_opt_append(struct opts_ctx *c, const char *name, const char *value)
{
	size_t need = strlen(name) + (value ? strlen(value) + 1 : 0) + 2;
	if (c->blk_len + need > c->blk_cap) {
		size_t cap = (c->blk_cap + need) * 2;
		char *n = realloc(c->o->blk_opts, cap);
		if (!n)
			return err_set(-ENOMEM, "out of memory");
		c->o->blk_opts = n;
		c->blk_cap = cap;
	}
	c->blk_len += (size_t)snprintf(c->o->blk_opts + c->blk_len, c->blk_cap - c->blk_len,
				       "%s%s%s%s", c->blk_len ? "," : "", name, value ? "=" : "",
				       value ? value : "");
	return 0;
}

/* One of a set of names mapping to values; *field 0 = unset. A second
 * option of the same kind with a different value is a conflict. */
struct opt_choice {
	const char *text;
	int value;
};

static int choice_set(int *field, const struct opt_choice *ch, size_t n, const char *what,
		      const char *opt, const char *text)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(ch[i].text, text))
			continue;
		if (*field && *field != ch[i].value)
			return err_set(-EINVAL, "mount option %s conflicts with an earlier %s option",
				       opt, what);
		*field = ch[i].value;
		return 0;
	}
	return err_set(-EINVAL, "mount option %s: unknown %s", opt, what);
}

#define NCHOICES(a) (sizeof(a) / sizeof((a)[0]))

static const struct opt_choice data_modes[] = {
	{"journal", EXT3_DATA_JOURNAL},
	{"ordered", EXT3_DATA_ORDERED},
	{"writeback", EXT3_DATA_WRITEBACK},
	{"guarded", EXT3_DATA_GUARDED},
};
static const struct opt_choice errors_modes[] = {
	{"continue", EXT3_ERRORS_CONTINUE},
	{"remount-ro", EXT3_ERRORS_RO},
	{"panic", EXT3_ERRORS_PANIC},
};
static const struct opt_choice data_err_modes[] = {
	{"ignore", EXT3_DATA_ERR_IGNORE},
	{"abort", EXT3_DATA_ERR_ABORT},
};
static const struct opt_choice atime_modes[] = {
	{"noatime", EXT3_ATIME_NOATIME},
	{"relatime", EXT3_ATIME_RELATIME},
	{"strictatime", EXT3_ATIME_STRICT},
};

/* Options with a value that must have one. */
static int need_value(const char *name, const char *value, const char *want)
{
	if (!value || !*value)
		return err_set(-EINVAL, "mount option %s needs %s", name, want);
	return 0;
}

static int read_side_opt(struct ext3_mount_opts *o, const char *name, const char *value)
{
	uint64_t v;
	int rc;
	if (!strcmp(name, "cache")) {
		if ((rc = need_value(name, value, "a size")) < 0)
			return rc;
		if ((rc = opts_parse_size(value, &v)) < 0)
			return rc;
		if (v < 64 * 1024)
			return err_set(-EINVAL, "mount option cache=%s: at least 64K", value);
		o->cache_bytes = (size_t)v;
	} else if (!strcmp(name, "readahead")) {
		if (!value || (rc = opts_parse_u64(value, &v)) < 0 || v > 4096)
			return err_set(-EINVAL, "mount option readahead=%s: 0..4096 blocks",
				       value ? value : "");
		o->readahead_blocks = (int)v;
	} else if (!strcmp(name, "file_readahead")) {
		if (!value || (rc = opts_parse_size(value, &v)) < 0 || (v && v < 64 * 1024) ||
		    v > 64u << 20)
			return err_set(-EINVAL, "mount option file_readahead=%s: 0 (off) or 64K..64M",
				       value ? value : "");
		o->file_readahead = (size_t)v;
	} else if (!strcmp(name, "dirty_ratio") || !strcmp(name, "dirty_background_ratio")) {
		if ((rc = tunable_set(page_tunables(), &o->page, name, value)) < 0)
			return err_wrap(-EINVAL, "mount option %s (%% of cache=)", name);
	} else if (!strcmp(name, "dirty_expire_centisecs") || !strcmp(name, "dirty_writeback_centisecs")) {
		/* Linux's vm sysctl names and unit (1/100 s), here per mount: how
		 * old a dirty page is before the flusher writes it (3000), and the
		 * flusher's period (500; 0: no periodic flusher, as the sysctl). */
		bool expire = !strcmp(name, "dirty_expire_centisecs");
		const struct tunable_desc *d =
			tunable_find(page_tunables(), expire ? "dirty_expire_ms" : "writeback_interval_ms");
		if (!value || opts_parse_u64(value, &v) < 0 || v > d->max / 10)
			return err_set(-EINVAL, "mount option %s=%s: 0..%llu (1/100 s)", name, value ? value : "",
				       (unsigned long long)(d->max / 10));
		if (expire)
			o->page.dirty_expire_ms = v * 10;
		else
			o->page.writeback_interval_ms = v * 10;
	} else if (!strcmp(name, "dirty_min")) {
		/* A size here, KiB in the page cache's table (and its range). */
		const struct tunable_desc *d = tunable_find(page_tunables(), "dirty_min_kb");
		if (!value || opts_parse_size(value, &v) < 0 || v / 1024 > d->max)
			return err_set(-EINVAL, "mount option dirty_min=%s: a size up to %lluG (0: the ratio alone)",
				       value ? value : "", (unsigned long long)(d->max >> 20));
		o->page.dirty_min_kb = v / 1024;
		o->dirty_min_set = true;
	} else if (!strcmp(name, "sb")) {
		if (!value || (rc = opts_parse_u64(value, &v)) < 0 || v == 0 || v > UINT32_MAX)
			return err_set(-EINVAL, "mount option sb=%s: a backup superblock number",
				       value ? value : "");
		o->sb_block = v;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int write_side_opt(struct ext3_mount_opts *o, const char *name, const char *value)
{
	char opt[96];
	snprintf(opt, sizeof opt, "%s%s%s", name, value ? "=" : "", value ? value : "");
	int rc;
	if (!strcmp(name, "data")) {
		if ((rc = need_value(name, value, "journal, ordered, writeback or guarded")) < 0)
			return rc;
		return choice_set(&o->data_mode, data_modes, NCHOICES(data_modes), "data mode", opt,
				  value);
	}
	if (!strcmp(name, "errors")) {
		if ((rc = need_value(name, value, "continue, remount-ro or panic")) < 0)
			return rc;
		return choice_set(&o->errors, errors_modes, NCHOICES(errors_modes), "errors behaviour",
				  opt, value);
	}
	if (!strcmp(name, "data_err")) {
		if ((rc = need_value(name, value, "ignore or abort")) < 0)
			return rc;
		return choice_set(&o->data_err, data_err_modes, NCHOICES(data_err_modes),
				  "data_err behaviour", opt, value);
	}
	if (!strcmp(name, "fsync_in_commit")) {
		if (!value || (strcmp(value, "0") && strcmp(value, "1")))
			return err_set(-EINVAL, "mount option %s: 0 or 1", opt);
		o->fsync_in_commit = value[0] == '1';
		o->fsync_in_commit_set = true;
		return 0;
	}
	if (!value && (!strcmp(name, "noatime") || !strcmp(name, "relatime") ||
		       !strcmp(name, "strictatime")))
		return choice_set(&o->atime, atime_modes, NCHOICES(atime_modes), "atime", opt, name);
	rc = jbd_config_set(&o->jcfg, name, value);
	if (rc == -EINVAL)
		return err_wrap(rc, "mount option %s", opt);
	return rc; /* 0, or -ENOENT: not a journal option either */
}

static int mount_opt_cb(void *ctx, const char *name, const char *value)
{
	struct opts_ctx *c = ctx;
	struct ext3_mount_opts *o = c->o;
	if (!strcmp(name, "ro") || !strcmp(name, "noload") || !strcmp(name, "fakeroot")) {
		if (value)
			return err_set(-EINVAL, "mount option %s takes no value", name);
		if (name[0] == 'r')
			o->ro = true;
		else if (name[0] == 'f')
			o->fakeroot = true;
		else
			o->noload = true;
		return 0;
	}
	int rc = read_side_opt(o, name, value);
	if (rc != -ENOENT)
		return rc;
	rc = write_side_opt(o, name, value);
	if (rc != -ENOENT)
		return rc;
	/* Block queue tunable: checked by blk_opts_validate below. */
	return blk_opt_append(c, name, value);
}

int ext3_mount_opts_parse(struct ext3_mount_opts *o, const char *opts)
{
	if (!opts || !*opts)
		return 0;
	struct opts_ctx c = {.o = o};
	if (o->blk_opts) {
		c.blk_len = strlen(o->blk_opts);
		c.blk_cap = c.blk_len + 1;
	}
	int rc = opts_parse(opts, mount_opt_cb, &c);
	if (!rc && o->blk_opts) {
		rc = blk_opts_validate(o->blk_opts);
		if (rc)
			rc = err_wrap(-EINVAL, "mount options");
	}
	/* An era preset brings its 2009 mount defaults (barrier=0, fs/jbd's
	 * commit, fsync's data written by fsync itself) unless barrier= /
	 * journal_shadow= / fsync_in_commit= was given, in any order,
	 * and its default data mode, which data= or the superblock's default
	 * mount options override at mount (data_mode_resolve). */
	if (!rc) {
		jbd_config_era_defaults_opts(&o->jcfg, o->blk_opts);
		char preset[32];
		if (blk_opts_preset(o->blk_opts, preset, sizeof preset)) {
			o->era_data_mode = ext3_era_data_mode(preset);
			if (!o->fsync_in_commit_set)
				o->fsync_in_commit = !blk_preset_is_era(preset);
			if (!o->dirty_min_set && blk_preset_is_era(preset))
				o->page.dirty_min_kb = 0;
		}
	}
	return rc;
}

int ext3_era_data_mode(const char *preset)
{
	if (!preset || !blk_preset_is_era(preset))
		return 0;
	/* CONFIG_EXT3_DEFAULTS_TO_ORDERED arrived (default n) in the 2.6.30
	 * merge window, before -rc1; 2.6.29 knew only ordered. */
	return strcmp(preset, "2.6.29") ? EXT3_DATA_WRITEBACK : EXT3_DATA_ORDERED;
}

const char *ext3_data_mode_name(int mode)
{
	for (size_t i = 0; i < NCHOICES(data_modes); i++)
		if (data_modes[i].value == mode)
			return data_modes[i].text;
	return "default";
}
