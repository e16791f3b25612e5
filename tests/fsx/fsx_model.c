/* fsx's in-memory model: what each name and open slot of the work root must
 * show after a sequence of operations, and which errno each call must give.
 *
 * The errno rules are Linux's for the cases the generator produces (file
 * names only hold regular files, directory names only directories, and
 * directories hold only files):
 *   - a missing parent directory or a missing source name: ENOENT;
 *   - a closed slot: EBADF;
 *   - create/link/mkdir onto an existing name: EEXIST;
 *   - rmdir or rename onto a non-empty directory: ENOTEMPTY;
 *   - renameat2 NOREPLACE onto an existing name: EEXIST (checked before the
 *     same-inode shortcut, as do_renameat2 does); EXCHANGE with a missing
 *     target: ENOENT;
 *   - rename between two names of the same inode (hard links, or one name
 *     to itself): success and nothing changes.
 * An inode lives while it has a name or an open slot.
 */
#include "fsx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILE_BASE FSX_DIRS

bool model_is_dir_path(int path) { return path >= 0 && path < FSX_DIRS; }

int model_parent(int path)
{
	if (path < FILE_BASE + FSX_FILES)
		return -1;
	return (path - FILE_BASE - FSX_FILES) / FSX_FILES;
}

/* The path index of file n in directory dir (-1: the root). */
static int file_path(int dir, int n) { return FILE_BASE + FSX_FILES * (dir + 1) + n; }

const char *model_path_name(int path)
{
	static char names[FSX_NPATHS][16];
	if (path < 0 || path >= FSX_NPATHS)
		return "?";
	if (!names[path][0]) {
		if (path < FSX_DIRS)
			snprintf(names[path], sizeof names[path], "d%d", path);
		else if (model_parent(path) < 0)
			snprintf(names[path], sizeof names[path], "f%d", path - FILE_BASE);
		else
			snprintf(names[path], sizeof names[path], "d%d/f%d", model_parent(path),
				 (path - FILE_BASE) % FSX_FILES);
	}
	return names[path];
}

int model_path_lookup(const char *name)
{
	for (int p = 0; p < FSX_NPATHS; p++)
		if (!strcmp(model_path_name(p), name))
			return p;
	return -1;
}

void model_init(struct fsx_model *m)
{
	memset(m, 0, sizeof *m);
	for (int p = 0; p < FSX_NPATHS; p++)
		m->path_ino[p] = -1;
	for (int s = 0; s < FSX_SLOTS; s++)
		m->slot_ino[s] = -1;
}

void model_free(struct fsx_model *m)
{
	for (int i = 0; i < FSX_MAXINO; i++)
		free(m->ino[i].data);
	model_init(m);
}

static int ino_alloc(struct fsx_model *m, bool dir)
{
	for (int i = 0; i < FSX_MAXINO; i++) {
		if (m->ino[i].used)
			continue;
		struct fsx_inode *in = &m->ino[i];
		free(in->data);
		memset(in, 0, sizeof *in);
		in->used = true;
		in->dir = dir;
		in->nlink = dir ? 2 : 1;
		return i;
	}
	fprintf(stderr, "fsx: model inode table full\n"); /* cannot happen: names + slots < MAXINO */
	abort();
}

/* Drop the inode once nothing refers to it. */
static void ino_put(struct fsx_model *m, int i)
{
	struct fsx_inode *in = &m->ino[i];
	if (in->dir || in->nlink || in->refs)
		return;
	free(in->data);
	memset(in, 0, sizeof *in);
}

static void ino_resize(struct fsx_inode *in, uint64_t size)
{
	if (size > in->cap) {
		uint64_t cap = in->cap ? in->cap : 4096;
		while (cap < size)
			cap *= 2;
		uint8_t *d = realloc(in->data, cap);
		if (!d) {
			fprintf(stderr, "fsx: out of memory for the model\n");
			exit(2);
		}
		memset(d + in->cap, 0, cap - in->cap);
		in->data = d;
		in->cap = cap;
	}
	if (size < in->size) /* a later extension reads zeroes */
		memset(in->data + size, 0, in->size - size);
	in->size = size;
}

static bool parent_exists(const struct fsx_model *m, int path)
{
	int d = model_parent(path);
	return d < 0 || m->path_ino[d] >= 0;
}

/* The inode of an existing name, or -1 (missing name or parent). */
static int lookup(const struct fsx_model *m, int path)
{
	return parent_exists(m, path) ? m->path_ino[path] : -1;
}

int model_target_ino(const struct fsx_model *m, const struct fsx_target *t)
{
	if (t->slot)
		return t->idx >= 0 && t->idx < FSX_SLOTS ? m->slot_ino[t->idx] : -1;
	return lookup(m, t->idx);
}

unsigned model_dir_entries(const struct fsx_model *m, int dir)
{
	unsigned n = 0;
	if (dir < 0) {
		for (int p = 0; p < FILE_BASE + FSX_FILES; p++)
			n += m->path_ino[p] >= 0;
		return n;
	}
	for (int f = 0; f < FSX_FILES; f++)
		n += m->path_ino[file_path(dir, f)] >= 0;
	return n;
}

static void slot_close(struct fsx_model *m, int slot)
{
	int i = m->slot_ino[slot];
	if (i < 0)
		return;
	m->slot_ino[slot] = -1;
	m->ino[i].refs--;
	ino_put(m, i);
}

static void name_drop(struct fsx_model *m, int path)
{
	int i = m->path_ino[path];
	m->path_ino[path] = -1;
	if (m->ino[i].dir) {
		memset(&m->ino[i], 0, sizeof m->ino[i]);
		return;
	}
	m->ino[i].nlink--;
	ino_put(m, i);
}

static void write_pattern(struct fsx_inode *in, uint64_t off, uint64_t len, uint32_t tag)
{
	if (off + len > in->size)
		ino_resize(in, off + len);
	for (uint64_t k = 0; k < len; k++)
		in->data[off + k] = fsx_pattern(tag, off + k);
}

static int data_op(struct fsx_model *m, const struct fsx_op *op)
{
	int i = model_target_ino(m, &op->t);
	if (i < 0)
		return op->t.slot ? EBADF : ENOENT;
	struct fsx_inode *in = &m->ino[i];
	switch (op->kind) {
	case OP_WRITE:
		write_pattern(in, op->off, op->len, op->tag);
		break;
	case OP_MAPWRITE:
		if (op->len)
			write_pattern(in, op->off, op->len, op->tag);
		break;
	case OP_TRUNC:
		ino_resize(in, op->off);
		break;
	default: /* READ, MAPREAD, FSYNC, BADWRITE: nothing changes */
		break;
	}
	return 0;
}

/* rename(2) / renameat2(2) of two files or two directories. */
static int rename_op(struct fsx_model *m, const struct fsx_op *op)
{
	int a = op->a, b = op->b;
	int ia = lookup(m, a);
	if (ia < 0 || !parent_exists(m, b))
		return ENOENT;
	int ib = m->path_ino[b];
	if (op->flag == 1 && ib >= 0)
		return EEXIST;
	if (op->flag == 2 && ib < 0)
		return ENOENT;
	if (ia == ib)
		return 0;
	bool dir = model_is_dir_path(a);
	if (op->flag == 2) {
		m->path_ino[a] = ib;
		m->path_ino[b] = ia;
	} else {
		if (dir && ib >= 0 && model_dir_entries(m, b) > 0)
			return ENOTEMPTY;
		if (ib >= 0)
			name_drop(m, b);
		m->path_ino[b] = ia;
		m->path_ino[a] = -1;
	}
	if (dir) /* the directories' contents go with them */
		for (int f = 0; f < FSX_FILES; f++) {
			int pa = file_path(a, f), pb = file_path(b, f);
			int t = m->path_ino[pa];
			m->path_ino[pa] = m->path_ino[pb];
			m->path_ino[pb] = t;
		}
	return 0;
}

static int name_op(struct fsx_model *m, const struct fsx_op *op)
{
	int i;
	switch (op->kind) {
	case OP_CREATE:
		if (!parent_exists(m, op->a))
			return ENOENT;
		if (m->path_ino[op->a] >= 0)
			return EEXIST;
		m->path_ino[op->a] = ino_alloc(m, false);
		return 0;
	case OP_OPEN:
		slot_close(m, op->slot);
		if (!parent_exists(m, op->a))
			return ENOENT;
		i = m->path_ino[op->a];
		if (i < 0 && !op->flag)
			return ENOENT;
		if (i < 0)
			i = m->path_ino[op->a] = ino_alloc(m, false);
		m->slot_ino[op->slot] = i;
		m->ino[i].refs++;
		return 0;
	case OP_CLOSE:
		if (m->slot_ino[op->slot] < 0)
			return EBADF;
		slot_close(m, op->slot);
		return 0;
	case OP_UNLINK:
	case OP_RMDIR:
		if (lookup(m, op->a) < 0)
			return ENOENT;
		if (op->kind == OP_RMDIR && model_dir_entries(m, op->a))
			return ENOTEMPTY;
		name_drop(m, op->a);
		return 0;
	case OP_LINK:
		i = lookup(m, op->a);
		if (i < 0 || !parent_exists(m, op->b))
			return ENOENT;
		if (m->path_ino[op->b] >= 0)
			return EEXIST;
		m->path_ino[op->b] = i;
		m->ino[i].nlink++;
		return 0;
	case OP_MKDIR:
		if (m->path_ino[op->a] >= 0)
			return EEXIST;
		m->path_ino[op->a] = ino_alloc(m, true);
		return 0;
	default:
		return rename_op(m, op);
	}
}

int model_apply(struct fsx_model *m, const struct fsx_op *op)
{
	return fsx_is_data_op(op->kind) ? data_op(m, op) : name_op(m, op);
}
