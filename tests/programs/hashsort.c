/* hashsort: a small real program for end-to-end trace tests (tiermem trace record).
 *
 * Builds an open-addressing hash table of N keys (random inserts and lookups over a
 * table of 2N slots), then sorts a copy of the keys with a bottom-up merge sort
 * (sequential sweeps), then looks up a skewed (hot) subset of keys again. The three
 * phases have the distinct access patterns a heatmap shows: random over the table,
 * streaming over two arrays, and a small hot set.
 *
 * Usage: hashsort [N]   (default 20000). Prints a checksum so the work is not optimised away.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
    if (n < 16)
        n = 16;
    size_t cap = 2 * n;
    uint64_t *table = calloc(cap, sizeof *table);
    uint64_t *keys = malloc(n * sizeof *keys);
    uint64_t *tmp = malloc(n * sizeof *tmp);
    if (!table || !keys || !tmp)
        return 1;
    /* Phase 1: hash inserts. */
    for (size_t i = 0; i < n; i++) {
        uint64_t k = next() | 1;
        keys[i] = k;
        size_t h = (size_t)((k * 0x9E3779B97F4A7C15ULL) >> 20) % cap;
        while (table[h] && table[h] != k)
            h = (h + 1) % cap;
        table[h] = k;
    }
    /* Phase 2: merge sort of the keys. */
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = keys[a] <= keys[b] ? keys[a++] : keys[b++];
            while (a < mid)
                tmp[o++] = keys[a++];
            while (b < hi)
                tmp[o++] = keys[b++];
        }
        memcpy(keys, tmp, n * sizeof *keys);
    }
    /* Phase 3: lookups of a hot 1/16 of the keys. */
    uint64_t found = 0;
    for (size_t i = 0; i < 4 * n; i++) {
        uint64_t k = keys[next() % (n / 16)];
        size_t h = (size_t)((k * 0x9E3779B97F4A7C15ULL) >> 20) % cap;
        while (table[h] && table[h] != k)
            h = (h + 1) % cap;
        found += table[h] == k;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum = sum * 31 + keys[i];
    printf("hashsort n=%zu found=%llu checksum=%016llx sorted=%d\n", n, (unsigned long long)found,
           (unsigned long long)sum, n < 2 || keys[0] <= keys[1]);
    free(table);
    free(keys);
    free(tmp);
    return 0;
}
