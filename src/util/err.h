/* Error reporting convention.
 *
 * Every function that can fail returns a negative errno value. Where a human
 * needs more than strerror() (which option was bad, which feature is unknown),
 * the failing function also records a message with err_set(); the caller that
 * reports to the user (CLI, bench) prints err_last(). The message is
 * thread-local, so concurrent callers never see each other's messages.
 */
#ifndef NOSTALL_UTIL_ERR_H
#define NOSTALL_UTIL_ERR_H

/* Record a message for the calling thread and return `neg_errno` unchanged,
 * so that `return err_set(-EINVAL, "bad x: %s", s);` is one line. */
int err_set(int neg_errno, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last message set on this thread, or strerror of `neg_errno` if none was
 * set since the last err_clear(). */
const char *err_last(int neg_errno);
void err_clear(void);
/* Prefix the calling thread's current message: the message becomes
 * "PREFIX: old" (or "PREFIX: strerror" when none was set), and neg_errno is
 * returned unchanged. Safe although the old message lives in the buffer being
 * written (it is copied first). A layer tag ("ext3: ") that starts both the
 * prefix and the old message is said once. */
int err_wrap(int neg_errno, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
