/* ksmcheck MIB SECONDS: report whether this process is KSM-mergeable as a whole
 * (prctl(PR_GET_MEMORY_MERGE), set by `tiermem exec --ksm` before exec), fill MIB MiB of
 * anonymous memory with identical pages without any madvise(MADV_MERGEABLE), and wait up to
 * SECONDS for ksmd to merge them (/proc/self/ksm_merging_pages). Prints
 * "ksmcheck merge_any=0|1 merging_pages=N after=SEC". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_GET_MEMORY_MERGE
#define PR_GET_MEMORY_MERGE 68 /* include/uapi/linux/prctl.h, Linux 6.4+ */
#endif

static long merging_pages(void) {
    FILE *f = fopen("/proc/self/ksm_merging_pages", "r");
    long n = -1;
    if (f) { if (fscanf(f, "%ld", &n) != 1) n = -1; fclose(f); }
    return n;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: ksmcheck MIB SECONDS\n"); return 2; }
    size_t len = (size_t)atol(argv[1]) << 20;
    double secs = atof(argv[2]);
    int any = prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    memset(p, 0x5a, len);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long n = 0;
    double el = 0;
    do {
        usleep(100000);
        n = merging_pages();
        clock_gettime(CLOCK_MONOTONIC, &t);
        el = (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9;
    } while (n <= 0 && el < secs);
    printf("ksmcheck merge_any=%d merging_pages=%ld after=%.1f\n", any, n, el);
    return 0;
}
