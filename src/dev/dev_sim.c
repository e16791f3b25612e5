/* sim: device (not implemented yet). */
#include "dev/dev_impl.h"
#include "util/err.h"

#include <errno.h>

int dev_sim_open(const char *args, struct dev **out)
{
	(void)out;
	return err_set(-ENOSYS, "sim: not implemented yet ('%s')", args);
}
