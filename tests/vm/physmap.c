// physmap MIB [STRIDE_KIB]: map MIB of anonymous memory, write one byte per page in address
// order (a program's first touch of its arrays), then read /proc/self/pagemap (needs root) and
// print, on one line, how the physical frames follow the virtual pages:
//   pages, present, up = share of neighbouring virtual pages whose frames are neighbours
//   (pfn + 1), down = pfn - 1, run_median / run_p90 = lengths of ascending runs (pages),
//   span2m = distinct 2 MiB physical blocks / the fewest that could hold them,
//   mix4m = mean number of distinct 4 MiB virtual slices with a page in each 4 MiB physical
//   block the mapping uses (1: each physical block holds one stretch of the program).
// What DAMON's physical-address monitoring sees of a program depends on this layout:
// docs/recordings/physmap-vm.md.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: physmap MIB\n");
    return 2;
  }
  size_t pages = (size_t)atol(argv[1]) * 256;
  if (pages == 0) {
    fprintf(stderr, "physmap: MIB must be a positive number\n");
    return 2;
  }
  long psz = sysconf(_SC_PAGESIZE);
  unsigned char *mem = mmap(NULL, pages * psz, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("physmap: mmap");
    return 1;
  }
  madvise(mem, pages * psz, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < pages; i++) mem[i * psz] = (unsigned char)i;
  int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) {
    perror("physmap: /proc/self/pagemap");
    return 1;
  }
  uint64_t *pfn = calloc(pages, sizeof *pfn);
  uint64_t *ent = malloc(pages * sizeof *ent);
  off_t off = (off_t)((uintptr_t)mem / psz) * 8;
  if (!pfn || !ent || pread(fd, ent, pages * 8, off) != (ssize_t)(pages * 8)) {
    perror("physmap: reading pagemap");
    return 1;
  }
  size_t present = 0, up = 0, down = 0;
  for (size_t i = 0; i < pages; i++) {
    if (ent[i] >> 63) {
      pfn[i] = ent[i] & ((1ULL << 55) - 1);
      present++;
    }
  }
  if (present == 0 || pfn[0] == 0) {
    printf("pages=%zu present=%zu (no frame numbers: not root?)\n", pages, present);
    return 1;
  }
  // Neighbours and ascending runs.
  uint64_t *runs = calloc(pages, sizeof *runs);
  size_t nruns = 0, run = 1;
  for (size_t i = 1; i < pages; i++) {
    if (pfn[i] == pfn[i - 1] + 1) {
      up++;
      run++;
    } else {
      if (pfn[i] + 1 == pfn[i - 1]) down++;
      runs[nruns++] = run;
      run = 1;
    }
  }
  runs[nruns++] = run;
  qsort(runs, nruns, sizeof *runs, cmp_u64);
  // Physical 2 MiB blocks used, and how many 4 MiB virtual slices share each 4 MiB block.
  uint64_t *blk = malloc(pages * sizeof *blk);
  for (size_t i = 0; i < pages; i++) blk[i] = pfn[i] >> 9;
  qsort(blk, pages, sizeof *blk, cmp_u64);
  size_t blocks = 0;
  for (size_t i = 0; i < pages; i++) blocks += i == 0 || blk[i] != blk[i - 1];
  uint64_t *pair = malloc(pages * sizeof *pair);  // (physical 4 MiB block, virtual slice)
  for (size_t i = 0; i < pages; i++) pair[i] = ((pfn[i] >> 10) << 24) | (i >> 10);
  qsort(pair, pages, sizeof *pair, cmp_u64);
  size_t pblocks = 0, pairs = 0;
  for (size_t i = 0; i < pages; i++) {
    if (i == 0 || pair[i] != pair[i - 1]) pairs++;
    if (i == 0 || pair[i] >> 24 != pair[i - 1] >> 24) pblocks++;
  }
  printf("pages=%zu present=%zu up=%.3f down=%.3f run_median=%lu run_p90=%lu runs=%zu "
         "span2m=%.2f mix4m=%.2f pfn_first=%lu\n",
         pages, present, (double)up / (pages - 1), (double)down / (pages - 1),
         (unsigned long)runs[nruns / 2], (unsigned long)runs[nruns * 9 / 10], nruns,
         (double)blocks / ((pages + 511) / 512), (double)pairs / pblocks,
         (unsigned long)pfn[0]);
  return 0;
}
