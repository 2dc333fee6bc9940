/* hotcold HOT_MIB COLD_MIB SLOW_NODE FAST_NODE SECONDS
 * Places a hot region on SLOW_NODE and a cold region on FAST_NODE (mbind, then the policy
 * is reset to default so only the agent moves pages), then writes every hot page in a loop
 * and never touches the cold region again. Once per second it prints where the pages are:
 * "hotcold t=SEC hot_fast=N hot_slow=N tc=SEC cold_fast=N cold_slow=N" (pages, move_pages
 * query; t and tc are when the hot and the cold query started). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PG 4096UL
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static char *region(size_t len, int node) {
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(1); }
    unsigned long mask = 1UL << node;
    if (syscall(SYS_mbind, p, len, 2 /* MPOL_BIND */, &mask, 65, 0) < 0) { perror("mbind"); exit(1); }
    for (size_t i = 0; i < len; i += PG) p[i] = 1;
    if (syscall(SYS_mbind, p, len, 0 /* MPOL_DEFAULT */, NULL, 0, 0) < 0) { perror("mbind default"); exit(1); }
    return p;
}

static void where(char *p, size_t len, int fast, long *on_fast, long *on_slow) {
    size_t n = len / PG;
    void **pages = malloc(n * sizeof(void *));
    int *st = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) pages[i] = p + i * PG;
    *on_fast = *on_slow = 0;
    if (syscall(SYS_move_pages, 0, n, pages, NULL, st, 0) == 0)
        for (size_t i = 0; i < n; i++) { if (st[i] == fast) (*on_fast)++; else if (st[i] >= 0) (*on_slow)++; }
    free(pages); free(st);
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: hotcold HOT_MIB COLD_MIB SLOW FAST SECONDS\n"); return 2; }
    size_t hot = (size_t)atol(argv[1]) << 20, cold = (size_t)atol(argv[2]) << 20;
    int slow = atoi(argv[3]), fast = atoi(argv[4]);
    double secs = atof(argv[5]);
    char *c = region(cold, fast);
    /* A gap between the two mappings, so DAMON's initial regions can split there. */
    char *gap = mmap(NULL, 64UL << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    (void)gap;
    char *h = region(hot, slow);
    double t0 = now(), next = t0;
    volatile unsigned long sink = 0;
    while (now() - t0 < secs) {
        for (size_t i = 0; i < hot; i += PG) h[i]++;
        sink += h[0];
        if (now() >= next) {
            long hf, hs, cf, cs;
            /* Each placement is stamped with the time its query started: a query can take
             * long while pages migrate, and must not compress the measured interval. */
            double th = now() - t0;
            where(h, hot, fast, &hf, &hs);
            double tc = now() - t0;
            where(c, cold, fast, &cf, &cs);
            printf("hotcold t=%.2f hot_fast=%ld hot_slow=%ld tc=%.2f cold_fast=%ld cold_slow=%ld\n", th, hf, hs, tc, cf, cs);
            fflush(stdout);
            next += 1.0;
        }
        usleep(2000);
    }
    return 0;
}
