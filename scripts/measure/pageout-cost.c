/* What paging a page out to zram and faulting it back in costs, on this host's kernel.
 *
 * DAMON's pageout action ends in reclaim_pages() (mm/vmscan.c), the same path
 * madvise(MADV_PAGEOUT) takes (madvise_cold_or_pageout_pte_range → reclaim_pages): isolate
 * the folio, unmap it (try_to_unmap, a TLB flush), add it to the swap cache and write it to
 * the swap device, here zram (compression), then free it. A later touch takes a major fault
 * (do_swap_page: zram decompression, a new page, the PTE). This program fills an anonymous
 * mapping with data of a chosen kind, pages it all out with MADV_PAGEOUT and times that, then
 * touches one word of every page and times the faults. The simulator's per-page pageout cost
 * (`action_page_ns` + `reclaim_unmap_page` + zram `compress_cost`) and refault cost
 * (`decompress_cost` + the fault) are held against it (docs/recordings/parsec-reaccess.md).
 *
 * Needs an active zram swap device (as root: echo 4G > /sys/block/zram0/disksize;
 * mkswap /dev/zram0; swapon /dev/zram0; afterwards swapoff /dev/zram0;
 * echo 1 > /sys/block/zram0/reset).
 *
 * Build and run: cc -O2 -o pageout-cost scripts/measure/pageout-cost.c -lm
 *                ./pageout-cost MIB KIND   (KIND: random | smooth | sparse) */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* random: xorshift words, incompressible; smooth: doubles of a slowly varying function, as
 * numerical programs hold; sparse: one word in eight non-zero in the first 512 B of each
 * 4 KiB, the rest zero, as fresh heap with small records. */
static void fill(unsigned long long *w, size_t words, const char *kind) {
    unsigned long long x = 88172645463325252ULL;
    for (size_t i = 0; i < words; i++) {
        if (!strcmp(kind, "random")) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            w[i] = x;
        } else if (!strcmp(kind, "smooth")) {
            double d = sin(i * 0.001) * 100.0 + (double)(i % 7);
            memcpy(&w[i], &d, sizeof d);
        } else {
            w[i] = (i % 512 < 64 && i % 8 == 0) ? i : 0;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3 || atol(argv[1]) <= 0 ||
        (strcmp(argv[2], "random") && strcmp(argv[2], "smooth") && strcmp(argv[2], "sparse"))) {
        fprintf(stderr, "usage: %s MIB random|smooth|sparse\n", argv[0]);
        return 2;
    }
    size_t bytes = (size_t)atol(argv[1]) << 20, pages = bytes / 4096;
    unsigned long long *w = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(w, bytes, MADV_NOHUGEPAGE);
    fill(w, bytes / 8, argv[2]);
    double t0 = now();
    if (madvise(w, bytes, MADV_PAGEOUT)) {
        perror("madvise(MADV_PAGEOUT)");
        return 1;
    }
    double t1 = now();
    volatile unsigned long long sum = 0;
    for (size_t i = 0; i < bytes / 8; i += 512)
        sum += w[i];
    double t2 = now();
    printf("%s: %zu pages: pageout %.2f us a page, fault back %.2f us a page\n", argv[2], pages,
           (t1 - t0) * 1e6 / pages, (t2 - t1) * 1e6 / pages);
    return 0;
}
