/* What a DAMOS action's walk costs per page it skips (free pages, pages on no LRU).
 *
 * damon_pa_pageout() and its siblings (mm/damon/paddr.c) step through a region page by
 * page and call damon_get_folio() (mm/damon/ops-common.c) on each pfn: pfn_to_online_page()
 * (the section's online bit and its subsection map), PageTail() and folio_test_lru() on
 * the struct page. A free page fails the LRU test and is skipped. So a region of free
 * memory costs one 64-byte struct page read per 4 KiB page, in address order, plus a few
 * loads from the (cached) section table. This loop does the same over an array laid out
 * like vmemmap and prints the time per pfn; the simulator's `walk_page_ns`
 * ([kernel.damon.costs], docs/config.md) comes from it.
 *
 * Build and run: cc -O2 -o pfn-walk scripts/measure/pfn-walk.c && ./pfn-walk 16000000
 * (16 M pfns = 61 GiB of simulated RAM, 976 MiB of struct pages; the loop is bound by one
 * core's streaming read bandwidth, so it runs at 64 B / that bandwidth per page). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct page { /* 64 bytes, as on x86-64 */
	uint64_t flags, compound_head, lru_prev, mapping, index, private_;
	uint32_t mapcount, refcount;
	uint64_t memcg_data;
};
struct mem_section { uint64_t section_mem_map; uint64_t *usage; };

#define SECTION_SHIFT 15 /* 128 MiB sections of 4 KiB pages */
#define SUBSECTION_SHIFT 9 /* 2 MiB subsections */
#define SECTION_ONLINE 2
#define PG_LRU 4

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)atol(argv[1]) : 16000000;
	if (n == 0) {
		fprintf(stderr, "usage: pfn-walk NR_PFNS (a positive count)\n");
		return 2;
	}
	struct page *vmemmap = aligned_alloc(64, n * sizeof(*vmemmap));
	size_t nsec = (n >> SECTION_SHIFT) + 1;
	struct mem_section *sec = calloc(nsec, sizeof(*sec));
	uint64_t *usage = malloc(nsec * 64);
	if (!vmemmap || !sec || !usage) {
		fprintf(stderr, "pfn-walk: cannot allocate %zu MiB\n", (n * sizeof(*vmemmap)) >> 20);
		return 2;
	}
	memset(vmemmap, 0, n * sizeof(*vmemmap)); /* every page free: no PG_lru */
	memset(usage, 0xff, nsec * 64);
	for (size_t i = 0; i < nsec; i++) {
		sec[i].section_mem_map = 1 | SECTION_ONLINE;
		sec[i].usage = &usage[i * 8];
	}
	double best = 1e9;
	size_t on_lru = 0;
	for (int round = 0; round < 5; round++) {
		double t = now();
		on_lru = 0;
		for (size_t pfn = 0; pfn < n; pfn++) {
			struct mem_section *ms = &sec[pfn >> SECTION_SHIFT];
			if (!(ms->section_mem_map & SECTION_ONLINE))
				continue; /* pfn_to_online_page: offline section */
			size_t sub = (pfn >> SUBSECTION_SHIFT) & 63;
			if (!((ms->usage[sub >> 6] >> (sub & 63)) & 1))
				continue; /* pfn_section_valid */
			struct page *page = &vmemmap[pfn];
			if (page->compound_head & 1)
				continue; /* PageTail */
			if (!(page->flags & (1u << PG_LRU)))
				continue; /* folio_test_lru: a free page */
			on_lru++;
		}
		t = now() - t;
		if (t < best)
			best = t;
	}
	printf("%zu pfns (%zu MiB of struct page, %zu on an LRU): %.2f ns per pfn\n", n,
	       (n * sizeof(*vmemmap)) >> 20, on_lru, best * 1e9 / n);
	return 0;
}
