/* SPDX-License-Identifier: MIT
 * loadgen: a small HTTP GET load generator on libcurl multi, used where wrk
 * cannot go: following the gateway's 301 to the target (as real clients do).
 * The same tool drives nginx and direct target reads, so the comparison is
 * client-neutral.
 *
 *   loadgen -c CONNS -d SECONDS [-L] [-H HEADER]... [-C CAFILE] URLFILE
 *     -L  follow redirects
 *     -H  a request header ("Authorization: Bearer ..."), repeatable
 *     -C  the CA to verify HTTPS servers with
 * URLFILE: one URL per line, used round-robin. Prints one JSON line:
 *   {"requests":N,"ok":N,"errors":N,"seconds":S,"rps":R,"bytes":B}
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char **urls;
static size_t nurls;
static unsigned long long bytes;

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    bytes += sz * n;
    return sz * n;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int conns = 32, secs = 5, follow = 0, opt;
    struct curl_slist *hdrs = NULL;
    const char *ca = NULL;
    while ((opt = getopt(argc, argv, "c:d:LH:C:")) != -1) {
        if (opt == 'c')
            conns = atoi(optarg);
        else if (opt == 'd')
            secs = atoi(optarg);
        else if (opt == 'L')
            follow = 1;
        else if (opt == 'H')
            hdrs = curl_slist_append(hdrs, optarg);
        else if (opt == 'C')
            ca = optarg;
        else {
            fprintf(stderr, "usage: loadgen -c CONNS -d SECONDS [-L] [-H HEADER]... [-C CAFILE] URLFILE\n");
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "usage: loadgen -c CONNS -d SECONDS [-L] [-H HEADER]... [-C CAFILE] URLFILE\n");
        return 2;
    }
    FILE *f = fopen(argv[optind], "r");
    if (!f) {
        perror(argv[optind]);
        return 1;
    }
    char line[4096];
    size_t cap = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0])
            continue;
        if (nurls == cap) {
            cap = cap ? cap * 2 : 1024;
            urls = realloc(urls, cap * sizeof(char *));
        }
        urls[nurls++] = strdup(line);
    }
    fclose(f);
    if (!nurls)
        return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)conns * 4);
    unsigned long long done = 0, ok = 0, errs = 0;
    size_t next = 0;
    double t0 = now(), end = t0 + secs;
    for (int i = 0; i < conns; i++) {
        CURL *c = curl_easy_init();
        curl_easy_setopt(c, CURLOPT_URL, urls[next++ % nurls]);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, (long)follow);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        if (hdrs)
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        if (ca)
            curl_easy_setopt(c, CURLOPT_CAINFO, ca);
        curl_multi_add_handle(m, c);
    }
    int running = 1;
    while (running) {
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *c = msg->easy_handle;
            long st = 0;
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
            done++;
            if (msg->data.result == CURLE_OK && st == 200)
                ok++;
            else
                errs++;
            curl_multi_remove_handle(m, c);
            if (now() < end) {
                curl_easy_setopt(c, CURLOPT_URL, urls[next++ % nurls]);
                curl_multi_add_handle(m, c);
                running = 1;
            } else {
                curl_easy_cleanup(c);
            }
        }
        if (running)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    double dt = now() - t0;
    printf("{\"requests\":%llu,\"ok\":%llu,\"errors\":%llu,\"seconds\":%.3f,\"rps\":%.1f,\"bytes\":%llu}\n", done, ok,
           errs, dt, (double)ok / dt, bytes);
    curl_multi_cleanup(m);
    curl_slist_free_all(hdrs);
    curl_global_cleanup();
    return errs ? 3 : 0;
}
