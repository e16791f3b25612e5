/* Public API: mount and unmount (include/nostall/nostall.h). Option
 * parsing, the journal replay, every mount check and the writable bring-up
 * and teardown are ext3's (src/extfs/super/mount.c); this file adds the device
 * spec, the handle count and the API's own tables (lookup counts,
 * descriptors). */
#include "api/api_int.h"

#include "dev/dev.h"
#include "extfs/inode/cred.h"
#include "util/err.h"
#include "util/opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

const char *nostall_errmsg(int rc) { return err_last(rc); }

int nostall_errmsg_set(int rc, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set(rc, "%s", msg);
}

int nostall_dev_spec_info(const char *spec, struct nostall_dev_info *out)
{
	struct dev_spec_info di;
	int rc = dev_spec_parse(spec, &di);
	*out = (struct nostall_dev_info){
		.kind = dev_kind_name(di.kind),
		.base_kind = dev_kind_name(di.base),
		.has_kind = di.has_kind,
		.plain_file = di.plain_file,
		.simulated = di.simulated,
		.in_memory = di.in_memory,
		.file = di.file,
		.file_len = di.file_len,
	};
	return rc;
}

int nostall_mount_dev(struct dev *dev, const char *opts, unsigned flags, struct nostall_fs **out)
{
	*out = NULL;
	if (!dev)
		return err_set(-EINVAL, "nostall_mount_dev: no device");
	struct ext3_mount_opts mo;
	ext3_mount_opts_init(&mo);
	int rc = ext3_mount_opts_parse(&mo, opts);
	if (!rc && (flags & ~NOSTALL_MOUNT_RDONLY))
		rc = err_set(-EINVAL, "nostall_mount: unknown flags 0x%x", flags);
	bool rw = !(flags & NOSTALL_MOUNT_RDONLY) && !mo.ro;
	struct nostall_fs *fs = NULL;
	if (!rc) {
		fs = calloc(1, sizeof *fs);
		if (!fs)
			rc = err_set(-ENOMEM, "out of memory");
	}
	if (!rc)
		rc = ext3_fs_mount(dev, &mo, rw ? EXT3_MOUNT_JOURNAL : 0, &fs->e);
	ext3_mount_opts_release(&mo);
	if (rc) {
		free(fs);
		return rc;
	}
	fs->dev = dev;
	fs->rw = rw;
	/* the credentials of calls made without their own (nostall_cred_use):
	 * the mounting process's as they are now, or root's with -o fakeroot */
	struct ext3_creds cr;
	if (ext3_fs_opts(fs->e)->fakeroot)
		ext3_creds_root(&cr);
	else
		ext3_creds_of_process(&cr);
	ext3_fs_cred_default_set(fs->e, &cr);
	ext3_acl_path_checks_on(fs->e);
	api_lookup_init(fs);
	pthread_mutex_init(&fs->fd_lock, NULL);
	fs->file_readahead = ext3_fs_opts(fs->e)->file_readahead;
	atomic_init(&fs->handles, 0);
	*out = fs;
	return 0;
}

/* "kind:..." for a known device kind, else a plain path. */
int nostall_mount(const char *image_or_spec, const char *opts, unsigned flags,
		  struct nostall_fs **out)
{
	*out = NULL;
	if (!image_or_spec || !*image_or_spec)
		return err_set(-EINVAL, "nostall_mount: empty image name");
	char *spec = NULL;
	if (dev_spec_has_kind(image_or_spec))
		spec = strdup(image_or_spec);
	else if (asprintf(&spec, "file:%s", image_or_spec) < 0)
		spec = NULL;
	if (!spec)
		return err_set(-ENOMEM, "out of memory");
	struct dev *dev = NULL;
	int rc = dev_open(spec, &dev);
	free(spec);
	if (rc)
		return rc;
	rc = nostall_mount_dev(dev, opts, flags, out);
	if (rc) {
		dev_close(dev);
		return rc;
	}
	(*out)->own_dev = true;
	return 0;
}

int nostall_umount(struct nostall_fs *fs)
{
	if (!fs)
		return 0;
	int n = atomic_load(&fs->handles);
	if (n)
		return err_set(-EBUSY, "nostall_umount: %d handles still open", n);
	api_lookup_drop_all(fs);
	api_fd_table_free(fs);
	int rc = ext3_fs_unmount(fs->e);
	if (rc)
		rc = err_wrap(rc, "nostall_umount");
	if (fs->own_dev)
		dev_close(fs->dev);
	pthread_mutex_destroy(&fs->lookup_lock);
	pthread_mutex_destroy(&fs->fd_lock);
	free(fs);
	return rc;
}


/* ---- option strings: util/opts.h behind the public names ---- */

int nostall_opts_each(const char *s, nostall_opt_cb cb, void *ctx)
{
	return opts_parse(s, cb, ctx);
}

int nostall_parse_size(const char *s, uint64_t *out)
{
	return opts_parse_size(s, out);
}

int nostall_parse_u64(const char *s, uint64_t *out)
{
	return opts_parse_u64(s, out);
}

int nostall_parse_double(const char *s, double *out)
{
	return opts_parse_double(s, out);
}
