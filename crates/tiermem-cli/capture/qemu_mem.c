/*
 * tiermem's QEMU user-mode plugin: every guest memory access of every thread, with the
 * thread's instruction count, written in blocks to file descriptor 3 for
 * `tiermem trace record --tool qemu` (crates/tiermem-trace/src/qemu.rs reads them).
 *
 * Written against QEMU's public TCG plugin API (docs/devel/tcg-plugins.rst, plugin API
 * version 1 as QEMU 7.2 exports it): the declarations below are the few calls used, so
 * that the plugin builds without QEMU's development headers, which Debian does not ship.
 *
 * Stream: blocks of a 16-byte header {magic "TMQ2", vcpu, count, flags} and `count`
 * 8-byte little-endian words; flags bit 0 marks a thread's last block (its vCPU exited).
 * A word is an access, `address (bits 0-47) | instructions since the thread's previous
 * access (48-55, at most 254) | size_shift << 56 | store << 60`, unless bit 61 or 62 is set:
 * bit 61, the thread's instruction count (bits 0-55) for a gap of 255 or more; bit 62, the
 * full address (bits 0-55) of the next access, whose own address bits are then 0 (an
 * address at or above 2^48, which x86-64 user space does not use). Half the bytes of a
 * plain {instructions, address} pair: the pipe and the converter carry less.
 * Instructions are counted per translation block as it starts executing, so the accesses
 * of one block share its count.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

#define EXPORT __attribute__((visibility("default")))

/* --- the plugin API calls used (QEMU include/qemu/qemu-plugin.h, version 1) --- */
typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum cb_flags { CB_NO_REGS = 0 };
enum mem_rw { MEM_RW = 3 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*mem_cb)(unsigned int, qemu_plugin_meminfo_t, uint64_t, void *);
typedef void (*udata_cb)(unsigned int, void *);
typedef void (*vcpu_cb)(qemu_plugin_id_t, unsigned int);
typedef void (*atexit_cb)(qemu_plugin_id_t, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *, mem_cb, enum cb_flags,
                                      enum mem_rw, void *);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, udata_cb, enum cb_flags,
                                          void *);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t);
void qemu_plugin_register_vcpu_exit_cb(qemu_plugin_id_t, vcpu_cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, atexit_cb, void *);

EXPORT int qemu_plugin_version = 1;

/* --- per-thread buffers --- */
#define RECORDS 65536
#define MAX_VCPUS 4096
#define OUT_FD 3

#define ADDR_BITS 48
#define GAP_MAX 254
#define TIME_WORD (1ULL << 61)
#define ADDR_WORD (1ULL << 62)
#define LOW56 ((1ULL << 56) - 1)

struct thread_buf {
    uint32_t magic, vcpu, count, flags; /* the block header, written with the records */
    uint64_t rec[RECORDS];
    uint64_t insns; /* instructions this thread has started */
    uint64_t noted; /* its count at its previous access */
};

static struct thread_buf *bufs[MAX_VCPUS];
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int failed;

static void write_all(const void *p, size_t n)
{
    const char *c = p;
    while (n > 0 && !failed) {
        ssize_t w = write(OUT_FD, c, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            failed = 1; /* the reader went away: stop writing, let the program finish */
            return;
        }
        c += w;
        n -= (size_t)w;
    }
}

static void flush(struct thread_buf *b, uint32_t flags)
{
    b->flags = flags;
    pthread_mutex_lock(&out_lock);
    write_all(&b->magic, 16 + (size_t)b->count * 8);
    pthread_mutex_unlock(&out_lock);
    b->count = 0;
}

static struct thread_buf *buf_of(unsigned int vcpu)
{
    if (vcpu >= MAX_VCPUS) {
        return NULL;
    }
    struct thread_buf *b = bufs[vcpu];
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b) {
            return NULL;
        }
        memcpy(&b->magic, "TMQ2", 4);
        b->vcpu = vcpu;
        bufs[vcpu] = b; /* only this vCPU's thread touches its slot until it exits */
    }
    return b;
}

static inline void put(struct thread_buf *b, uint64_t word)
{
    b->rec[b->count] = word;
    if (++b->count == RECORDS) {
        flush(b, 0);
    }
}

static void on_tb_exec(unsigned int vcpu, void *n_insns)
{
    struct thread_buf *b = buf_of(vcpu);
    if (b) {
        b->insns += (uintptr_t)n_insns;
    }
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *u)
{
    struct thread_buf *b = buf_of(vcpu);
    (void)u;
    if (!b) {
        return;
    }
    uint64_t meta = (uint64_t)(qemu_plugin_mem_size_shift(info) & 15) << 56 |
                    (uint64_t)qemu_plugin_mem_is_store(info) << 60;
    uint64_t gap = b->insns - b->noted;
    b->noted = b->insns;
    if (gap > GAP_MAX) {
        put(b, TIME_WORD | (b->insns & LOW56));
        gap = 0;
    }
    if (vaddr >> ADDR_BITS) {
        put(b, ADDR_WORD | (vaddr & LOW56));
        vaddr = 0;
    }
    put(b, vaddr | gap << ADDR_BITS | meta);
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, CB_NO_REGS, (void *)(uintptr_t)n);
    for (size_t i = 0; i < n; i++) {
        qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), on_mem, CB_NO_REGS,
                                         MEM_RW, NULL);
    }
}

static void on_vcpu_exit(qemu_plugin_id_t id, unsigned int vcpu)
{
    (void)id;
    if (vcpu < MAX_VCPUS && bufs[vcpu]) {
        flush(bufs[vcpu], 1);
    }
}

static void on_plugin_exit(qemu_plugin_id_t id, void *u)
{
    (void)id;
    (void)u;
    for (unsigned int v = 0; v < MAX_VCPUS; v++) {
        if (bufs[v] && bufs[v]->count > 0) {
            flush(bufs[v], 1);
        }
    }
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                               char **argv)
{
    (void)info;
    (void)argc;
    (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
    qemu_plugin_register_vcpu_exit_cb(id, on_vcpu_exit);
    qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
    return 0;
}
