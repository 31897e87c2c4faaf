/* SPDX-License-Identifier: MIT
 * accept.h: the node's listening socket, and one thread that accepts on it
 * and hands each connection to the least busy of the poll loops
 * (libmicrohttpd daemons without a listening socket of their own).
 */
#ifndef SL_ACCEPT_H
#define SL_ACCEPT_H

#include "sl.h"

#include <netinet/in.h>

struct MHD_Daemon;

/* Bind and listen on sa (the port is taken here, so that a port in use is
 * reported before anything else starts). -1 with err. */
int sl_accept_listen(const struct sockaddr_in *sa, struct sl_err *err);
/* Start accepting: each connection goes to the loop with the fewest open
 * connections. max_conns: connections the node holds at once, one more is
 * closed as soon as accepted; max_per_ip the same for one client address
 * (0: no limit). loops is copied. */
int sl_accept_start(struct MHD_Daemon *const *loops, unsigned n, unsigned max_conns, unsigned max_per_ip,
                    struct sl_err *err);
/* A connection that sl_accept_start handed to loop i has closed (from
 * libmicrohttpd's MHD_CONNECTION_NOTIFY_CLOSED). */
void sl_accept_closed(unsigned i, const struct sockaddr *addr);
/* The connections each loop holds now, into n[0..max-1]; returns the
 * number of loops (0 before sl_accept_start). */
unsigned sl_accept_loads(unsigned *n, unsigned max);
/* Stop accepting and close the listening socket (connections stay). */
void sl_accept_stop(void);

#endif
