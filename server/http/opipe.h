/* SPDX-License-Identifier: MIT
 * opipe.h: a response body written by a producer thread, with
 * back-pressure: the producer blocks while `high` bytes wait to be sent, and
 * the connection is suspended (not polled) while nothing waits. Memory per
 * response stays under high plus one write. Bytes go out in runs of 64 KiB
 * (or at the end): a producer that writes a little and then waits long
 * should close or write more.
 */
#ifndef SL_OPIPE_H
#define SL_OPIPE_H

#include "http.h"

struct sl_opipe;

/* Answer r with status and ctype, a body of unknown length (chunked), and
 * return the producer's end. Call where an sl_resp_* call is allowed; the
 * producer (usually a thread started right after) writes, then closes. */
struct sl_opipe *sl_resp_opipe(struct sl_req *r, int status, const char *ctype, size_t high);
/* Append n bytes; blocks while the pipe is full. -1 once the client is gone
 * (stop producing). */
int sl_opipe_write(struct sl_opipe *p, const void *buf, size_t n);
/* The end of the body: failed cuts the response off (the client sees a
 * truncated chunked body, not a clean end). Releases the producer's end. */
void sl_opipe_close(struct sl_opipe *p, bool failed);

#endif
