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
struct sl_accept_limits {
    unsigned max_conns;         /* connections the node holds at once */
    unsigned max_per_ip;        /* the same for one client address (0: no limit) */
    unsigned header_timeout_s;  /* a connection's first request header must be in by then */
    unsigned idle_timeout_s;    /* between requests */
};
/* Start accepting: each connection goes to the loop with the fewest open
 * connections. At max_conns the connection that waited the longest (for
 * its first request, or between requests) is shut down to make room, and a
 * new one is closed only when every connection is in a request; past
 * max_per_ip a client's new connections are closed. loops is copied. */
int sl_accept_start(struct MHD_Daemon *const *loops, unsigned n, const struct sl_accept_limits *lim,
                    struct sl_err *err);
/* The request on connection fd began (its header is in: busy) or ended
 * (libmicrohttpd's request completion): a loop's thread. */
void sl_accept_request(int fd, bool busy);
/* A connection that sl_accept_start handed to loop i has closed (from
 * libmicrohttpd's MHD_CONNECTION_NOTIFY_CLOSED, before it closes fd). */
void sl_accept_closed(unsigned i, const struct sockaddr *addr, int fd);
/* The connections each loop holds now, into n[0..max-1]; returns the
 * number of loops (0 before sl_accept_start). */
unsigned sl_accept_loads(unsigned *n, unsigned max);
/* Stop accepting and close the listening socket (connections stay). */
void sl_accept_stop(void);

#endif
