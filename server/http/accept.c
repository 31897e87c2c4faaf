/* SPDX-License-Identifier: MIT
 * accept.c: one listening socket, one thread accepting on it, and the
 * connections spread over the poll loops by how many each holds.
 *
 * libmicrohttpd 0.9.75's thread pool has every poll loop poll the same
 * listening socket, and whichever wakes first accepts: the four connections
 * of a client that opens them together all landed on one loop of two, which
 * then served 10 MiB GETs at two thirds of nginx's rate while the other CPU
 * idled (bench/RESULTS.md §17.7). So each loop is a daemon of its own without
 * a listening socket, and this thread gives each new connection to the loop
 * with the fewest (MHD_add_connection wakes it). The node-wide connection
 * limit and the per-address limit, which libmicrohttpd would count per
 * daemon, are counted here.
 *
 * Slow clients. libmicrohttpd's connection timeout is an idle one: a client
 * that sends a byte of its header every few seconds keeps it open for ever,
 * and enough of them fill the node's connections. So each connection's
 * phase is kept here by its socket (waiting for its first request, idle
 * between requests, or in a request), and once a second this thread shuts
 * down the connections whose first request's header did not come within
 * net.http.header_timeout of the accept, or that sat between requests for
 * net.http.idle_conn_time, however they trickle. At the node's limit, the
 * connection waiting the longest is shut down to make room before a new one
 * is refused. A shutdown(2) makes libmicrohttpd see the end and close the
 * connection on its own loop; it is done under the lock that its close
 * notification takes first, and libmicrohttpd notifies before it closes the
 * socket, so the descriptor cannot be another one's by then.
 */
#include "accept.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_LOOPS 256

static int lfd = -1, stop_fd = -1;
static pthread_t acceptor;
static bool running;
static struct MHD_Daemon *loops[MAX_LOOPS];
static unsigned nloops, next_loop;
static unsigned live[MAX_LOOPS]; /* connections each loop holds (atomic) */
static unsigned total;           /* all of them (atomic) */
static unsigned conn_max, per_ip_max;

/* each open connection's phase, by its socket */
enum { S_FREE = 0, S_NEW, S_IDLE, S_BUSY };
struct slot {
    int64_t since;              /* mono ns: accepted, or its last request ended */
    int state;                  /* S_* (written by the loops: atomic) */
    bool shed;                  /* shut down here, not closed yet */
};
static struct slot *slots;
static int nslots;
static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t hdr_ns, idle_ns;

/* Connections per client address, when limited: a tree of counts, as
 * libmicrohttpd keeps its own. */
struct ip_count {
    in_addr_t a;
    unsigned n;
};
static void *ip_root;
static pthread_mutex_t ip_mu = PTHREAD_MUTEX_INITIALIZER;

static int ip_cmp(const void *x, const void *y)
{
    in_addr_t a = ((const struct ip_count *)x)->a, b = ((const struct ip_count *)y)->a;
    return a < b ? -1 : a > b;
}

static in_addr_t addr_of(const struct sockaddr *sa)
{
    return sa && sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_addr.s_addr : 0;
}

static bool ip_take(in_addr_t a)
{
    if (!per_ip_max)
        return true;
    struct ip_count key = { .a = a }, *c;
    bool ok = false;
    pthread_mutex_lock(&ip_mu);
    void **node = tfind(&key, &ip_root, ip_cmp);
    if (node) {
        c = *node;
    } else if ((c = calloc(1, sizeof(*c)))) {
        c->a = a;
        if (!tsearch(c, &ip_root, ip_cmp)) {
            free(c);
            c = NULL;
        }
    }
    if (c && c->n < per_ip_max) {
        c->n++;
        ok = true;
    }
    pthread_mutex_unlock(&ip_mu);
    return ok;
}

static void ip_give(in_addr_t a)
{
    if (!per_ip_max)
        return;
    struct ip_count key = { .a = a };
    pthread_mutex_lock(&ip_mu);
    void **node = tfind(&key, &ip_root, ip_cmp);
    struct ip_count *c = node ? *node : NULL;
    if (c && c->n && --c->n == 0) {
        tdelete(&key, &ip_root, ip_cmp);
        free(c);
    }
    pthread_mutex_unlock(&ip_mu);
}

void sl_accept_request(int fd, bool busy)
{
    if (fd < 0 || fd >= nslots)
        return;
    struct slot *sl = &slots[fd];
    if (!busy)
        __atomic_store_n(&sl->since, sl_mono_ns(), __ATOMIC_RELAXED);
    __atomic_store_n(&sl->state, busy ? S_BUSY : S_IDLE, __ATOMIC_RELEASE);
}

void sl_accept_closed(unsigned i, const struct sockaddr *addr, int fd)
{
    if (fd >= 0 && fd < nslots) {
        pthread_mutex_lock(&slot_mu);
        slots[fd] = (struct slot){ 0 };
        pthread_mutex_unlock(&slot_mu);
    }
    if (i >= nloops)
        return;
    __atomic_sub_fetch(&live[i], 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&total, 1, __ATOMIC_RELAXED);
    ip_give(addr_of(addr));
}

unsigned sl_accept_loads(unsigned *n, unsigned max)
{
    unsigned k = nloops < max ? nloops : max;
    for (unsigned i = 0; i < k; i++)
        n[i] = __atomic_load_n(&live[i], __ATOMIC_RELAXED);
    return k;
}

/* The loop with the fewest connections; among equals, the one after the
 * last chosen, so that a burst of new connections goes round. */
static unsigned pick(void)
{
    unsigned best = next_loop % nloops, least = __atomic_load_n(&live[best], __ATOMIC_RELAXED);
    for (unsigned k = 1; k < nloops; k++) {
        unsigned i = (next_loop + k) % nloops, n = __atomic_load_n(&live[i], __ATOMIC_RELAXED);
        if (n < least) {
            best = i;
            least = n;
        }
    }
    next_loop = best + 1;
    return best;
}

/* A refusal at a limit is worth a warning, but not one per connection. */
static void refused(const char *fmt, unsigned limit)
{
    static int64_t last;
    int64_t now = sl_mono_ns();
    if (now - last < 10 * 1000000000LL)
        return;
    last = now;
    sl_logw(fmt, limit);
}

/* (slot_mu held) shut down connection fd, once */
static void shed(int fd, const char *why)
{
    if (slots[fd].shed)
        return;
    slots[fd].shed = true;
    shutdown(fd, SHUT_RDWR);
    static int64_t last;
    int64_t now = sl_mono_ns();
    if (now - last >= 10 * 1000000000LL) {
        last = now;
        sl_logw("http: closing %s (logged every 10 s at most)", why);
    }
}

/* Shut down the connections past their phase's deadline (once a second). */
static void sweep(void)
{
    int64_t now = sl_mono_ns();
    pthread_mutex_lock(&slot_mu);
    for (int fd = 0; fd < nslots; fd++) {
        int st = __atomic_load_n(&slots[fd].state, __ATOMIC_ACQUIRE);
        int64_t age = now - __atomic_load_n(&slots[fd].since, __ATOMIC_RELAXED);
        if (st == S_NEW && age > hdr_ns)
            shed(fd, "connections whose first request's header did not come within net.http.header_timeout");
        else if (st == S_IDLE && age > idle_ns)
            shed(fd, "connections idle between requests for longer than net.http.idle_conn_time");
    }
    pthread_mutex_unlock(&slot_mu);
}

/* At the node's limit: shut down the connection that has waited the longest
 * (for its first request, or between requests); false when all are in a
 * request. */
static bool shed_oldest(void)
{
    pthread_mutex_lock(&slot_mu);
    int best = -1;
    for (int fd = 0; fd < nslots; fd++) {
        int st = __atomic_load_n(&slots[fd].state, __ATOMIC_ACQUIRE);
        if ((st == S_NEW || st == S_IDLE) && !slots[fd].shed &&
            (best < 0 || slots[fd].since < slots[best].since))
            best = fd;
    }
    if (best >= 0)
        shed(best, "the connections that waited the longest, to make room at the node's connection limit");
    pthread_mutex_unlock(&slot_mu);
    return best >= 0;
}

/* (A connection that libmicrohttpd takes but then fails to set up for want
 * of memory, before it reports it started, is never reported closed either:
 * it stays counted on its loop and against its address. libmicrohttpd
 * offers no hook for that case; it needs a failed 32 KiB allocation.) */
static void hand_over(int fd, const struct sockaddr_in *sa, socklen_t len)
{
    if (__atomic_load_n(&total, __ATOMIC_RELAXED) >= conn_max && !shed_oldest()) {
        refused("http: %u connections open, the node's limit, every one in a request: closing new ones (logged "
                "every 10 s at most)", conn_max);
        close(fd);
        return;
    }
    in_addr_t a = addr_of((const struct sockaddr *)sa);
    if (!ip_take(a)) {
        refused("http: a client address holds %u connections (net.http.max_conns_per_ip): closing its new ones "
                "(logged every 10 s at most)", per_ip_max);
        close(fd);
        return;
    }
    /* Keep at most 128 KiB not yet sent in the socket, so that the loop
     * pushes a large response itself as the window opens. Without it the
     * socket queues megabytes beyond the client's window, the loop sleeps,
     * and the kernel transmits them in the reader's context when its ACKs
     * come: on loopback a one-thread client (wrk) then spent twice its CPU
     * per GB and 10 MiB GETs ran at 0.6x nginx's rate (bench/RESULTS.md
     * §17.8). In-flight data is not limited by it, only the unsent queue. */
    int lowat = 128 * 1024;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat)) < 0)
        sl_logd("http: TCP_NOTSENT_LOWAT: %s", strerror(errno));
    unsigned i = pick();
    __atomic_add_fetch(&live[i], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&total, 1, __ATOMIC_RELAXED);
    if (fd < nslots) {
        pthread_mutex_lock(&slot_mu);
        slots[fd] = (struct slot){ .since = sl_mono_ns(), .state = S_NEW };
        pthread_mutex_unlock(&slot_mu);
    }
    if (MHD_add_connection(loops[i], fd, (const struct sockaddr *)sa, len) != MHD_YES) { /* (it closed fd) */
        __atomic_sub_fetch(&live[i], 1, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&total, 1, __ATOMIC_RELAXED);
        ip_give(a);
        if (fd < nslots) {
            pthread_mutex_lock(&slot_mu);
            slots[fd] = (struct slot){ 0 };
            pthread_mutex_unlock(&slot_mu);
        }
    }
}

/* accept(2): errors of the new connection's network, to be taken as
 * EAGAIN, and the connection dropped */
static bool conn_error(int e)
{
    return e == EINTR || e == ECONNABORTED || e == EPROTO || e == ENETDOWN || e == ENOPROTOOPT ||
           e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP || e == ENETUNREACH ||
           e == EPERM;
}

static void *accept_main(void *arg)
{
    (void)arg;
    struct pollfd p[2] = { { .fd = lfd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
    int short_of = 0; /* the errno that stopped accepting, while it lasts */
    int64_t swept = sl_mono_ns();
    for (;;) {
        /* short of fds or memory: the backlog stays readable, so wait
         * 100 ms on stop_fd alone before trying again */
        p[0].fd = short_of ? -1 : lfd;
        if (poll(p, 2, short_of ? 100 : 1000) < 0 && errno != EINTR) {
            sl_loge("http: cannot wait for connections: %s; trying again in 100 ms", strerror(errno));
            usleep(100 * 1000);
            continue;
        }
        if (p[1].revents)
            return NULL;
        if (sl_mono_ns() - swept >= 1000000000LL) {
            sweep();
            swept = sl_mono_ns();
        }
        for (int k = 0; k < 64; k++) { /* (then look at stop_fd again) */
            struct sockaddr_in sa;
            socklen_t len = sizeof(sa);
            int fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0 && conn_error(errno))
                continue;
            if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                short_of = 0;
                break;
            }
            if (fd < 0) { /* EMFILE, ENFILE, ENOBUFS, ENOMEM: clients wait in the backlog */
                if (short_of != errno)
                    sl_logw("http: cannot accept connections: %s; retrying every 100 ms%s", strerror(errno),
                            errno == EMFILE || errno == ENFILE ? " (raise the open files limit: ulimit -n, or "
                                                                 "LimitNOFILE= in a systemd unit)" : "");
                short_of = errno;
                break;
            }
            if (short_of)
                sl_logi("http: accepting connections again");
            short_of = 0;
            hand_over(fd, &sa, len);
        }
    }
}

int sl_accept_listen(const struct sockaddr_in *sa, struct sl_err *err)
{
    char where[INET_ADDRSTRLEN + 8];
    inet_ntop(AF_INET, &sa->sin_addr, where, INET_ADDRSTRLEN);
    snprintf(where + strlen(where), 8, ":%u", (unsigned)ntohs(sa->sin_port));
    int one = 1;
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(lfd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(lfd, 1024) < 0) {
        int e = errno;
        if (lfd >= 0)
            close(lfd);
        lfd = -1;
        return sl_errf(err, SL_EIO, "cannot listen on %s: %s%s", where, strerror(e),
                       e == EADDRINUSE ? " (another process is using the port: stop it, or set host_net.port)" : "");
    }
    return 0;
}

int sl_accept_start(struct MHD_Daemon *const *l, unsigned n, const struct sl_accept_limits *lim, struct sl_err *err)
{
    if (n == 0 || n > MAX_LOOPS)
        return sl_errf(err, SL_EINVAL, "%u HTTP poll loops: 1 to %d", n, MAX_LOOPS);
    memcpy(loops, l, n * sizeof(*l));
    nloops = n;
    conn_max = lim->max_conns;
    per_ip_max = lim->max_per_ip;
    hdr_ns = (int64_t)lim->header_timeout_s * 1000000000LL;
    idle_ns = (int64_t)lim->idle_timeout_s * 1000000000LL;
    struct rlimit rl;
    rlim_t nfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 65536;
    nslots = (int)(nfd > (1 << 20) ? 1 << 20 : nfd);
    slots = sl_xcalloc((size_t)nslots, sizeof(*slots));
    stop_fd = eventfd(0, EFD_CLOEXEC);
    int e = stop_fd < 0 ? errno : pthread_create(&acceptor, NULL, accept_main, NULL);
    if (e) {
        if (stop_fd >= 0)
            close(stop_fd);
        stop_fd = -1;
        return sl_errf(err, SL_EIO, "cannot start the thread that accepts connections: %s", strerror(e));
    }
    running = true;
    return 0;
}

void sl_accept_stop(void)
{
    if (running) {
        uint64_t one = 1;
        if (write(stop_fd, &one, sizeof(one)) < 0)
            sl_loge("http: cannot stop accepting: %s", strerror(errno));
        pthread_join(acceptor, NULL);
        running = false;
    }
    if (stop_fd >= 0)
        close(stop_fd);
    if (lfd >= 0)
        close(lfd);
    stop_fd = lfd = -1;
}
