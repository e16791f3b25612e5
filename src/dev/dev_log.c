/* log: device (not implemented yet). */
#include "dev/dev_impl.h"
#include "util/err.h"

#include <errno.h>

int dev_log_open(const char *args, struct dev **out)
{
	(void)out;
	return err_set(-ENOSYS, "log: not implemented yet ('%s')", args);
}

int dev_log_reader_open(const char *logfile, struct dev_log_reader **out)
{
	(void)out;
	return err_set(-ENOSYS, "log reader not implemented yet ('%s')", logfile);
}
void dev_log_reader_close(struct dev_log_reader *r) { (void)r; }
uint64_t dev_log_reader_count(const struct dev_log_reader *r) { (void)r; return 0; }
uint32_t dev_log_reader_sector_size(const struct dev_log_reader *r) { (void)r; return 512; }
int dev_log_reader_next(struct dev_log_reader *r, struct dev_log_entry *e) { (void)r; (void)e; return -ENOSYS; }
int dev_log_reader_rewind(struct dev_log_reader *r) { (void)r; return -ENOSYS; }
int dev_log_replay(const char *logfile, uint64_t upto, struct dev *target) { (void)logfile; (void)upto; (void)target; return -ENOSYS; }
int dev_log_crash_points(const char *logfile, uint64_t **points, size_t *n) { (void)logfile; (void)points; (void)n; return -ENOSYS; }
