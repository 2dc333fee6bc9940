/* wicheck MIB: map MIB MiB of anonymous memory, touch every page, and print how many
 * pages landed on each node (move_pages query), as "wicheck node0=N node1=M ...".
 * Used under `tiermem exec --interleave weighted`. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 64;
    size_t len = (size_t)mib << 20, pg = 4096, n = len / pg;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    /* Base pages: a THP would put 512 pages on one node and hide the per-page ratio. */
    madvise(p, len, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < n; i++) p[i * pg] = 1;
    void **pages = malloc(n * sizeof(void *));
    int *status = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) pages[i] = p + i * pg;
    if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) < 0) { perror("move_pages"); return 1; }
    long count[64] = {0}, bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (status[i] >= 0 && status[i] < 64) count[status[i]]++; else bad++;
    }
    printf("wicheck");
    for (int i = 0; i < 64; i++) if (count[i]) printf(" node%d=%ld", i, count[i]);
    printf(" missing=%ld\n", bad);
    return 0;
}
