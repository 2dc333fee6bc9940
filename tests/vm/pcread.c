/* pcread: small helpers for tests/vm/pagecache-record.sh (page-cache facts on a real kernel).
 *   pcread read FILE BS      read FILE with BS-byte read(2) calls; prints bytes, seconds and
 *                            ns per 4 KiB page ("pcread read bytes=.. s=.. ns_per_page=..")
 *   pcread loop N            N iterations of a dependent integer loop; prints ns per iteration
 *   pcread touch MIB PASSES  writes one byte per 4 KiB page of an anonymous MIB MiB buffer,
 *                            PASSES times after a first faulting pass; prints ns per page
 *   pcread filerange         scans /proc/kpageflags for file-LRU pages (LRU, not ANON, not
 *                            SWAPBACKED); prints the smallest and the end of the largest such
 *                            physical address, the page count and the range's size in pages
 * The loop and touch figures, taken in the guest and on the host, give TCG's slowdown. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PG 4096UL
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static int do_read(const char *path, size_t bs) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); return 1; }
    char *buf = malloc(bs);
    unsigned long long total = 0;
    double t0 = now();
    for (;;) {
        ssize_t n = read(fd, buf, bs);
        if (n < 0) { perror("read"); return 1; }
        if (n == 0) break;
        total += n;
    }
    double dt = now() - t0;
    printf("pcread read file=%s bs=%zu bytes=%llu s=%.3f ns_per_page=%.0f\n", path, bs, total, dt,
           dt * 1e9 / (total / PG ? total / PG : 1));
    close(fd);
    return 0;
}

static int do_loop(unsigned long n) {
    volatile unsigned long x = 1;
    double t0 = now();
    unsigned long v = x;
    for (unsigned long i = 0; i < n; i++) v = v * 2862933555777941757UL + 3037000493UL;
    x = v;
    double dt = now() - t0;
    printf("pcread loop n=%lu s=%.3f ns_per_iter=%.3f\n", n, dt, dt * 1e9 / n);
    return 0;
}

static int do_touch(unsigned long mib, int passes) {
    size_t len = mib << 20;
    volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    for (size_t i = 0; i < len; i += PG) p[i] = 1;
    double t0 = now();
    for (int k = 0; k < passes; k++)
        for (size_t i = 0; i < len; i += PG) p[i] += 1;
    double dt = now() - t0;
    printf("pcread touch mib=%lu passes=%d s=%.3f ns_per_page=%.2f\n", mib, passes, dt,
           dt * 1e9 / ((double)passes * (len / PG)));
    return 0;
}

static int do_filerange(void) {
    int fd = open("/proc/kpageflags", O_RDONLY);
    if (fd < 0) { perror("/proc/kpageflags"); return 1; }
    static uint64_t f[65536];
    uint64_t pfn = 0, lo = UINT64_MAX, hi = 0, count = 0;
    for (;;) {
        ssize_t n = read(fd, f, sizeof f);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n / 8; i++, pfn++) {
            uint64_t v = f[i];
            /* KPF_LRU 5, KPF_ANON 12, KPF_SWAPBACKED 14, KPF_NOPAGE 20 */
            if ((v >> 5 & 1) && !(v >> 12 & 1) && !(v >> 14 & 1) && !(v >> 20 & 1)) {
                if (pfn < lo) lo = pfn;
                hi = pfn;
                count++;
            }
        }
    }
    if (!count) { printf("pcread filerange none\n"); return 1; }
    printf("pcread filerange start=%llu end=%llu pages=%llu span_pages=%llu\n",
           (unsigned long long)(lo * PG), (unsigned long long)((hi + 1) * PG),
           (unsigned long long)count, (unsigned long long)(hi + 1 - lo));
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && !strcmp(argv[1], "read")) return do_read(argv[2], argc > 3 ? strtoul(argv[3], 0, 0) : 1 << 20);
    if (argc >= 3 && !strcmp(argv[1], "loop")) return do_loop(strtoul(argv[2], 0, 0));
    if (argc >= 4 && !strcmp(argv[1], "touch")) return do_touch(strtoul(argv[2], 0, 0), atoi(argv[3]));
    if (argc >= 2 && !strcmp(argv[1], "filerange")) return do_filerange();
    fprintf(stderr, "usage: pcread read FILE [BS] | loop N | touch MIB PASSES | filerange\n");
    return 2;
}
