/* The caller's credentials (cred.h): the thread's own set, else the
 * mount's default; what the kernel's capable(), in_group_p() and
 * inode_owner_or_capable() answer from them. */
#include "extfs/inode/cred.h"

#include "extfs/core/ext3_int.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

/* Set by ext3_cred_use; set = false: the mount's default applies. */
static _Thread_local struct {
	bool set;
	struct ext3_creds c;
} tl_cred;

void ext3_creds_of_process(struct ext3_creds *c)
{
	memset(c, 0, sizeof *c);
	c->uid = (uint32_t)geteuid();
	c->gid = (uint32_t)getegid();
	gid_t g[EXT3_CRED_NGROUPS_MAX];
	int n = getgroups(EXT3_CRED_NGROUPS_MAX, g);
	for (int i = 0; i < n; i++)
		c->groups[c->ngroups++] = (uint32_t)g[i];
	/* capget(2) without libcap: version 3 gives two 32-bit words */
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capget, &hdr, data) == 0)
		c->caps = ((uint64_t)data[1].effective << 32 | data[0].effective) & EXT3_CAPS_ALL;
	else if (c->uid == 0)
		c->caps = EXT3_CAPS_ALL;
}

void ext3_creds_root(struct ext3_creds *c)
{
	memset(c, 0, sizeof *c);
	c->caps = EXT3_CAPS_ALL;
}

void ext3_cred_use(const struct ext3_creds *c)
{
	tl_cred.set = c != NULL;
	if (c)
		tl_cred.c = *c;
}

void ext3_fs_cred_default_set(struct ext3_fs *fs, const struct ext3_creds *c)
{
	fs->cred_default = *c;
}

const struct ext3_creds *ext3_fs_cred_default(const struct ext3_fs *fs)
{
	return &fs->cred_default;
}

const struct ext3_creds *ext3_cred_current(const struct ext3_fs *fs)
{
	return tl_cred.set ? &tl_cred.c : &fs->cred_default;
}

bool ext3_creds_capable(const struct ext3_creds *c, unsigned cap)
{
	return (c->caps >> cap) & 1;
}

bool ext3_creds_in_group(const struct ext3_creds *c, uint32_t gid)
{
	if (c->gid == gid)
		return true;
	for (unsigned i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

bool ext3_creds_owner(const struct ext3_creds *c, uint32_t owner_uid)
{
	return c->uid == owner_uid || ext3_creds_capable(c, EXT3_CAP_FOWNER);
}

uint16_t ext3_creds_kill_suid(const struct ext3_creds *c, uint16_t mode, uint32_t file_gid)
{
	if ((mode & EXT3_S_IFMT) != EXT3_S_IFREG || ext3_creds_capable(c, EXT3_CAP_FSETID))
		return mode;
	mode &= (uint16_t)~04000u;
	if (mode & 02000u) {
		/* setattr_should_drop_sgid: with group execution always; a
		 * plain setgid (mandatory locking) when the writer is not in
		 * the file's group */
		if ((mode & 00010u) || !ext3_creds_in_group(c, file_gid))
			mode &= (uint16_t)~02000u;
	}
	return mode;
}

/* ---- the kernel's 2.6.30-era thread interface (ext3_fsops.h) ---- */

void ext3_cred_thread_set(uint32_t uid, uint32_t gid, const uint32_t *groups, unsigned ngroups)
{
	struct ext3_creds c;
	memset(&c, 0, sizeof c);
	c.uid = uid;
	c.gid = gid;
	c.ngroups = groups ? (ngroups < EXT3_CRED_NGROUPS_MAX ? ngroups : EXT3_CRED_NGROUPS_MAX) : 0;
	if (c.ngroups)
		memcpy(c.groups, groups, c.ngroups * sizeof *groups);
	/* the older call: root's capabilities for uid 0, and no access
	 * checks (its callers make their own) */
	c.caps = uid == 0 ? EXT3_CAPS_ALL : 0;
	c.noperm = true;
	ext3_cred_use(&c);
}

void ext3_cred_thread_reset(void)
{
	ext3_cred_use(NULL);
}

void ext3_cred_thread_get(const struct ext3_fs *fs, struct ext3_cred *cr)
{
	const struct ext3_creds *c = ext3_cred_current(fs);
	cr->uid = c->uid;
	cr->gid = c->gid;
	cr->xattrs = NULL;
	cr->nxattrs = 0;
}
