/*
 * scan_history.c -- whether a scan saw one point of history
 * (scan_history.h).
 */
#include "scan_history.h"

/* The seq of the write K saw (*SEEN 1) or missed (*SEEN 0), or 0 when the
 * key constrains nothing. */
static uint64_t constraint(const st_scan_key *k, int *seen) {
    if (k->writes != 1 || k->b.pending || k->a.cur == k->b.cur || !k->seq) return 0;
    if (k->seen == k->b.cur) return *seen = 1, k->seq;
    if (k->seen == k->a.cur) return *seen = 0, k->seq;
    return 0;
}

int st_scan_history_broken(const st_scan_key *k, size_t n, size_t *newest, size_t *oldest) {
    *newest = *oldest = n;
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        uint64_t s = constraint(&k[i], &seen);
        if (!s) continue;
        if (seen && (*newest == n || s > k[*newest].seq)) *newest = i;
        if (!seen && (*oldest == n || s < k[*oldest].seq)) *oldest = i;
    }
    return *newest < n && *oldest < n && k[*newest].seq >= k[*oldest].seq;
}
