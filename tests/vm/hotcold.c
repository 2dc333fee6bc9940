/* hotcold HOT_MIB COLD_MIB SLOW_NODE FAST_NODE SECONDS
 * Places a hot region on SLOW_NODE and a cold region on FAST_NODE (mbind, then the policy
 * is reset to default so only the agent moves pages), then writes every hot page in a loop
 * and never touches the cold region again. Once per second it prints where the pages are:
 * "hotcold t=SEC hot_fast=N hot_slow=N tc=SEC cold_fast=N cold_slow=N cold_node1=N" (pages,
 * move_pages query; t and tc are when the hot and the cold query started; cold_node1 counts
 * the cold pages on node 1, the kernel's demotion target of node 0 in both VMs; passes counts the
 * passes over the hot region so far). */
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

static void where(char *p, size_t len, int fast, long *on_fast, long *on_slow, long *on_n1) {
    size_t n = len / PG;
    void **pages = malloc(n * sizeof(void *));
    int *st = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) pages[i] = p + i * PG;
    *on_fast = *on_slow = *on_n1 = 0;
    if (syscall(SYS_move_pages, 0, n, pages, NULL, st, 0) == 0)
        for (size_t i = 0; i < n; i++) {
            if (st[i] == fast) (*on_fast)++; else if (st[i] >= 0) (*on_slow)++;
            if (st[i] == 1) (*on_n1)++;
        }
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
    /* The guest kernel clears a sampled PTE's accessed bit without a TLB flush (DAMON's
     * mkold), so the bit is set again only when the translation is walked anew. QEMU's soft
     * TLB holds all 4096 hot translations, unlike a hardware TLB, so DAMON would see the hot
     * pages in a few samples only. Changing 64 PTEs each pass makes the kernel flush the
     * whole TLB (the range exceeds tlb_single_page_flush_ceiling, 33 pages), as TLB pressure
     * would on hardware. */
    size_t flen = 64 * PG;
    char *fl = mmap(NULL, flen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fl == MAP_FAILED) { perror("mmap"); exit(1); }
    for (size_t i = 0; i < flen; i += PG) fl[i] = 1;
    volatile unsigned long sink = 0;
    long passes = 0;
    while (now() - t0 < secs) {
        for (size_t i = 0; i < hot; i += PG) h[i]++;
        sink += h[0];
        passes++;
        mprotect(fl, flen, PROT_READ);
        mprotect(fl, flen, PROT_READ | PROT_WRITE);
        if (now() >= next) {
            long hf, hs, h1, cf, cs, c1;
            /* Each placement is stamped with the time its query started: a query can take
             * long while pages migrate, and must not compress the measured interval. */
            double th = now() - t0;
            where(h, hot, fast, &hf, &hs, &h1);
            double tc = now() - t0;
            where(c, cold, fast, &cf, &cs, &c1);
            printf("hotcold t=%.2f hot_fast=%ld hot_slow=%ld tc=%.2f cold_fast=%ld cold_slow=%ld cold_node1=%ld passes=%ld\n", th, hf, hs, tc, cf, cs, c1, passes);
            fflush(stdout);
            next += 1.0;
        }
        usleep(2000);
    }
    return 0;
}
